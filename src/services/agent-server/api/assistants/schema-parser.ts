import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { getHeapStatistics } from 'node:v8';

/**
 * Reads graphs' JSON schemas from their TypeScript source with the official server's parser, in a child process
 * (schema-parser-child.mjs) so the server's event loop never waits on the compiler. A process, not a worker thread
 * (the official server's choice): a worker's memory is not all given back when it ends (Node 24 keeps ~300 MB), and a
 * second parse then put a 512 MB deployment over its memory bound, which kills the whole server; an exited process
 * gives back all of it. The child starts on the first job, parses one graph at a time, and ends when no job is left.
 * Its heap is bounded by the server's own bound (at most 1 GB), and it asks the kernel to kill it first when the
 * deployment goes over its memory (schema-parser-child.mjs): a source too big to parse fails its job, not the server. A
 * job that runs longer than the timeout (LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS as the official server reads it, 30 s by
 * default) fails and the child is killed. The compiler's diagnostics (the child's output) are dropped: they describe
 * the app's types, not this server.
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

const CHILD = fileURLToPath(new URL('./schema-parser-child.mjs', import.meta.url));
const DEFAULT_TIMEOUT_MS = 30_000;
const CLOSING = 'the server is closing';

export class SchemaParser {
  private readonly queue: Job[] = [];
  private child: ChildProcess | null = null;
  private current: { job: Job; timer: NodeJS.Timeout } | null = null;
  private nextId = 0;
  private closed = false;
  private readonly timeoutMs: () => number;
  private readonly heapMb: number;

  /** `timeoutMs` is read as each job starts; `heapMb` bounds the child's heap (default: the server's, ≤ 1024). */
  constructor(options: { timeoutMs?: () => number; heapMb?: number } = {}) {
    this.timeoutMs = options.timeoutMs ?? timeoutFromEnv;
    const serverMb = Math.round(getHeapStatistics().heap_size_limit / 1024 / 1024);
    this.heapMb = options.heapMb ?? Math.min(1024, Math.max(256, serverMb));
  }

  parse(spec: GraphSpec): Promise<SourceSchemas> {
    if (this.closed) return Promise.reject(new Error(CLOSING));
    return new Promise((resolve, reject) => {
      this.queue.push({ id: ++this.nextId, spec, resolve, reject });
      this.pump();
    });
  }

  /** Fails what is queued and ends the child. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new Error(CLOSING));
    this.finish(new Error(CLOSING));
    await this.stopChild();
  }

  private pump(): void {
    if (this.current !== null) return;
    const job = this.queue.shift();
    if (job === undefined) {
      void this.stopChild();
      return;
    }
    const timeoutMs = this.timeoutMs();
    const timer = setTimeout(() => {
      this.finish(new Error(`timed out after ${timeoutMs} ms`));
      void this.stopChild().then(() => this.pump());
    }, timeoutMs);
    this.current = { job, timer };
    this.startChild().send({ id: job.id, spec: { ...job.spec } });
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

  private startChild(): ChildProcess {
    if (this.child !== null) return this.child;
    const child = fork(CHILD, [], {
      // None of the server's own flags (its loader, its heap bound): the child's file and the parser are JavaScript.
      execArgv: [`--max-old-space-size=${this.heapMb}`],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    // The start of its error output: V8 says it ran out of memory there, before a long native stack.
    let stderrHead = '';
    child.stdout?.resume();
    child.stderr?.on('data', (d: Buffer) => {
      if (stderrHead.length < 4000) stderrHead += d.toString();
    });
    child.on('message', (answer: Answer) => {
      if (this.current?.job.id !== answer.id) return;
      if ('error' in answer) this.finish(new Error(answer.error));
      else this.finish(null, answer.schemas);
      this.pump();
    });
    child.on('error', () => {
      // Reported again by 'close' when the process ends; a failed start ends it too.
    });
    // 'close', not 'exit': by then its stderr is read whole (what says it ran out of memory).
    child.on('close', (code, signal) => {
      if (this.child !== child) return;
      this.child = null;
      const outOfMemory = /heap out of memory|Allocation failed/i.test(stderrHead);
      this.finish(new Error(outOfMemory ? 'the parser ran out of memory' : `the parser stopped (${signal ?? code})`));
      this.pump();
    });
    this.child = child;
    return child;
  }

  private async stopChild(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (child === null || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }
}

/** The official server's setting, read when a job starts (an app's `env` may set it). */
function timeoutFromEnv(): number {
  const ms = Number.parseInt(process.env.LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS ?? '', 10);
  return Number.isFinite(ms) && ms > 0 ? ms : DEFAULT_TIMEOUT_MS;
}
