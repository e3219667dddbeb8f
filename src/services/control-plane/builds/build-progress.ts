import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { isTerminal } from '../revision-state.ts';
import type { ControlPlaneStore } from '../store.ts';
import type { BuildStep, StoredRevision } from '../types.ts';

/**
 * A revision's build log as it runs: each step's start and end (with its duration) and the text the steps print,
 * written to the revision in the store at every step boundary and at most every `flushMs` while a step prints. The
 * store is the one place a follower reads (build-log-feed.ts), so a log request answered by another gateway process
 * sees the same progress. The text keeps its last BUILD_LOG_MAX characters; `build_log_offset` counts what went.
 */
export const BUILD_LOG_MAX = 64 * 1024;

export type ProgressFields = Required<Pick<StoredRevision, 'build_log' | 'build_log_offset' | 'build_steps'>>;

export interface BuildProgressOptions {
  readonly store: ControlPlaneStore;
  readonly deploymentId: string;
  readonly revisionId: string;
  readonly now: () => Date;
  readonly log: Logger;
  /** Longest wait before printed text reaches the store; default 500 ms. */
  readonly flushMs?: number;
}

export class BuildProgress {
  private text = '';
  private offset = 0;
  private readonly steps: BuildStep[] = [];
  private chain: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly o: BuildProgressOptions) {}

  /** Runs `work` as the step `name`: its start, then its end (`done` or `failed` with the error's message) are logged. */
  async step<T>(name: string, work: () => Promise<T>): Promise<T> {
    const index = this.steps.length;
    const started = performance.now();
    this.steps.push({ name, status: 'running', started_at: this.o.now().toISOString(), duration_ms: null });
    this.append(`==> ${name}\n`);
    await this.flush();
    try {
      const value = await work();
      this.end(index, started, 'done');
      return value;
    } catch (err) {
      this.end(index, started, 'failed', err instanceof Error ? err.message : String(err));
      throw err;
    } finally {
      await this.flush();
    }
  }

  /** Text a step printed (npm's output). */
  append(text: string): void {
    this.text += text;
    if (this.text.length > BUILD_LOG_MAX) {
      const cut = this.text.length - BUILD_LOG_MAX;
      this.text = this.text.slice(cut);
      this.offset += cut;
    }
    this.timer ??= setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, this.o.flushMs ?? 500).unref();
  }

  /** What a revision move carries, so the final status and the final log are one write. */
  fields(): ProgressFields {
    return {
      build_log: this.text === '' ? null : this.text,
      build_log_offset: this.offset,
      build_steps: [...this.steps],
    };
  }

  /** Writes the log so far to the revision (one write at a time, the newest text each time); never throws. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.chain = this.chain.then(async () => {
      try {
        await this.o.store.updateRevision(this.o.deploymentId, this.o.revisionId, (cur) =>
          isTerminal(cur.status) ? null : { ...cur, ...this.fields() },
        );
      } catch (err) {
        // The log is progress, not state: a store hiccup shows at the next write (the final move carries it all).
        this.o.log.warn({ err: (err as Error).message }, 'build log not written');
      }
    });
    return this.chain;
  }

  private end(index: number, started: number, status: 'done' | 'failed', message?: string): void {
    const ms = Math.round(performance.now() - started);
    const step = this.steps[index]!;
    this.steps[index] = { ...step, status, duration_ms: ms, ...(message !== undefined && { message }) };
    const seconds = (ms / 1000).toFixed(2);
    this.append(`==> ${step.name} ${status} in ${seconds} s${message !== undefined ? `: ${message}` : ''}\n`);
  }
}
