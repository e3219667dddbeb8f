import { getHeapStatistics } from 'node:v8';
import { Worker } from 'node:worker_threads';

/**
 * Reads graphs' JSON schemas from their TypeScript source with the official server's parser, in one worker thread
 * (schema-parser-worker.mjs) so the server's event loop never waits on the compiler. The worker starts on the first
 * job, parses one graph at a time, and ends when no job is left (the compiler's memory goes with it). Its heap is
 * bounded (half the process's, at most 512 MB): a source too big to parse fails its job, not the server. A job that
 * runs longer than the timeout (LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS as the official server reads it, 30 s by
 * default) fails and the worker is ended. The compiler's diagnostics (the worker's output) are dropped, as they
 * describe the app's types, not this server.
 */
export interface GraphSchema {
  readonly state?: unknown;
  readonly input?: unknown;
  readonly output?: unknown;
  readonly config?: unknown;
}

/** A graph's schemas and its subgraphs', by the parser's names: `<export>` and `<export>|<node>|...`. */
export type SourceSchemas = Readonly<Record<string, GraphSchema>>;

export interface GraphSpec {
  readonly sourceFile: string;
  readonly exportSymbol: string;
}

interface Job {
  readonly id: number;
  readonly spec: GraphSpec;
  resolve(schemas: SourceSchemas): void;
  reject(err: Error): void;
}

type Answer = { id: number; schemas: SourceSchemas } | { id: number; error: string };

const WORKER = new URL('./schema-parser-worker.mjs', import.meta.url);
const DEFAULT_TIMEOUT_MS = 30_000;

export class SchemaParser {
  private readonly queue: Job[] = [];
  private worker: Worker | null = null;
  private current: { job: Job; timer: NodeJS.Timeout } | null = null;
  private nextId = 0;
  private closed = false;

  private readonly timeoutMs: () => number;
  private readonly heapMb: number;

  /** `timeoutMs` is read as each job starts; `heapMb` bounds the worker's heap (default: half the process's, ≤ 512). */
  constructor(options: { timeoutMs?: () => number; heapMb?: number } = {}) {
    this.timeoutMs = options.timeoutMs ?? timeoutFromEnv;
    const half = Math.round(getHeapStatistics().heap_size_limit / 1024 / 1024 / 2);
    this.heapMb = options.heapMb ?? Math.min(512, Math.max(128, half));
  }

  parse(spec: GraphSpec): Promise<SourceSchemas> {
    if (this.closed) return Promise.reject(new Error('the server is closing'));
    return new Promise((resolve, reject) => {
      this.queue.push({ id: ++this.nextId, spec, resolve, reject });
      this.pump();
    });
  }

  /** Fails what is queued and ends the worker. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new Error('the server is closing'));
    this.finish(new Error('the server is closing'));
    await this.stopWorker();
  }

  private pump(): void {
    if (this.current !== null) return;
    const job = this.queue.shift();
    if (job === undefined) {
      void this.stopWorker();
      return;
    }
    const timeoutMs = this.timeoutMs();
    const timer = setTimeout(() => {
      this.finish(new Error(`timed out after ${timeoutMs} ms`));
      void this.stopWorker().then(() => this.pump());
    }, timeoutMs);
    this.current = { job, timer };
    this.startWorker().postMessage({ id: job.id, spec: { ...job.spec } });
  }

  /** Settles the running job (with `err`, or with `schemas`). */
  private finish(err: Error | null, schemas?: SourceSchemas): void {
    const current = this.current;
    if (current === null) return;
    this.current = null;
    clearTimeout(current.timer);
    if (err !== null) current.job.reject(err);
    else current.job.resolve(schemas ?? {});
  }

  private startWorker(): Worker {
    if (this.worker !== null) return this.worker;
    const worker = new Worker(WORKER, {
      resourceLimits: { maxOldGenerationSizeMb: this.heapMb },
      stdout: true,
      stderr: true,
      // The worker needs no loader of the parent's (tsx): its file and the parser are plain JavaScript.
      execArgv: [],
    });
    worker.stdout.resume();
    worker.stderr.resume();
    worker.on('message', (answer: Answer) => {
      if (this.current?.job.id !== answer.id) return;
      if ('error' in answer) this.finish(new Error(answer.error));
      else this.finish(null, answer.schemas);
      this.pump();
    });
    worker.on('error', (err) => {
      if (this.worker !== worker) return;
      this.worker = null;
      this.finish(err.message.includes('memory') ? new Error('the parser ran out of memory') : err);
      this.pump();
    });
    worker.on('exit', () => {
      if (this.worker !== worker) return;
      this.worker = null;
      this.finish(new Error('the parser stopped'));
      this.pump();
    });
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private async stopWorker(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker !== null) await worker.terminate();
  }
}

/** The official server's setting, read when a job starts (an app's `env` may set it). */
function timeoutFromEnv(): number {
  const ms = Number.parseInt(process.env.LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS ?? '', 10);
  return Number.isFinite(ms) && ms > 0 ? ms : DEFAULT_TIMEOUT_MS;
}
