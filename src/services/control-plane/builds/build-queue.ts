/**
 * Background jobs with a concurrency limit. A job is identified by an id and
 * belongs to a group (its deployment); cancelling removes it if it waits, or
 * aborts its signal and waits for it to stop if it runs. The API never waits
 * on a job: `add` returns at once.
 */
export type Job = (signal: AbortSignal) => Promise<void>;

interface Entry {
  readonly id: string;
  readonly group: string;
  readonly job: Job;
  readonly abort: AbortController;
  done?: Promise<void>;
}

export class BuildQueue {
  private readonly waiting: Entry[] = [];
  private readonly running = new Map<string, Entry>();
  private idleWaiters: (() => void)[] = [];
  private closed = false;

  constructor(
    readonly concurrency: number,
    private readonly onError: (err: unknown, id: string) => void = () => {},
  ) {
    if (!(concurrency >= 1)) throw new RangeError('concurrency must be at least 1');
  }

  get size(): { readonly running: number; readonly waiting: number } {
    return { running: this.running.size, waiting: this.waiting.length };
  }

  /** Queues `job` under `id` (a second add of a queued or running id is ignored). */
  add(id: string, group: string, job: Job): void {
    if (this.closed || this.running.has(id) || this.waiting.some((e) => e.id === id)) return;
    this.waiting.push({ id, group, job, abort: new AbortController() });
    this.pump();
  }

  /** Jobs of `group` running now. */
  runningIn(group: string): number {
    return [...this.running.values()].filter((e) => e.group === group).length;
  }

  has(id: string): boolean {
    return this.running.has(id) || this.waiting.some((e) => e.id === id);
  }

  /** Stops job `id`: dropped if waiting, aborted (and awaited) if running. */
  async cancel(id: string): Promise<void> {
    await this.stop((e) => e.id === id);
  }

  /** Stops every job of `group`. */
  async cancelGroup(group: string): Promise<void> {
    await this.stop((e) => e.group === group);
  }

  /** Resolves when nothing runs or waits. */
  idle(): Promise<void> {
    if (this.running.size === 0 && this.waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Refuses new jobs, drops waiting ones, aborts running ones and waits for them. */
  async close(): Promise<void> {
    this.closed = true;
    await this.stop(() => true);
  }

  private async stop(which: (e: Entry) => boolean): Promise<void> {
    for (let i = this.waiting.length - 1; i >= 0; i--) if (which(this.waiting[i]!)) this.waiting.splice(i, 1);
    const stopping = [...this.running.values()].filter(which);
    for (const e of stopping) e.abort.abort();
    await Promise.all(stopping.map((e) => e.done));
    this.settle();
  }

  private pump(): void {
    while (this.running.size < this.concurrency && this.waiting.length > 0) {
      const entry = this.waiting.shift()!;
      this.running.set(entry.id, entry);
      entry.done = (async () => {
        try {
          await entry.job(entry.abort.signal);
        } catch (err) {
          if (!entry.abort.signal.aborted) this.onError(err, entry.id);
        } finally {
          this.running.delete(entry.id);
          this.pump();
          this.settle();
        }
      })();
    }
  }

  private settle(): void {
    if (this.running.size === 0 && this.waiting.length === 0) for (const w of this.idleWaiters.splice(0)) w();
  }
}
