/**
 * Background jobs with a concurrency limit, fair across tenants. A job is
 * identified by an id, belongs to a group (its deployment) and to a tenant
 * (for builds: the workspace's organisation, so one organisation's many
 * workspaces are one tenant here; when it is still being looked up, a
 * promise: the job waits, known to `has` and `cancel`, until it resolves);
 * at most `perTenant` jobs of one tenant run at once, and a freed slot goes
 * to the next tenant waiting in turn (round robin), so one tenant's many slow
 * builds never hold every slot nor keep another tenant waiting behind them.
 * Cancelling removes a job if it waits, or aborts its signal and waits for it
 * to stop if it runs. The API never waits on a job: `add` returns at once.
 */
export type Job = (signal: AbortSignal) => Promise<void>;

interface Entry {
  readonly id: string;
  readonly group: string;
  readonly tenant: string;
  readonly job: Job;
  readonly abort: AbortController;
  done?: Promise<void>;
}

export interface BuildQueueOptions {
  /** Most jobs of one tenant running at once (BUILD_CONCURRENCY_PER_TENANT); default: no bound but `concurrency`. */
  readonly perTenant?: number;
}

export class BuildQueue {
  /** Waiting jobs per tenant, first in first out (tenants in the order they came, for ties). */
  private readonly waiting = new Map<string, Entry[]>();
  /** When each tenant's last job started (a count): the least recent goes first. A number per workspace that built. */
  private readonly served = new Map<string, number>();
  private turn = 0;
  private readonly running = new Map<string, Entry>();
  /** Jobs whose tenant is still being looked up. */
  private readonly pending = new Map<string, Omit<Entry, 'tenant'>>();
  private idleWaiters: (() => void)[] = [];
  private closed = false;
  readonly perTenant: number;

  constructor(
    readonly concurrency: number,
    private readonly onError: (err: unknown, id: string) => void = () => {},
    { perTenant = concurrency }: BuildQueueOptions = {},
  ) {
    if (!(concurrency >= 1)) throw new RangeError('concurrency must be at least 1');
    if (!(perTenant >= 1)) throw new RangeError('perTenant must be at least 1');
    this.perTenant = perTenant;
  }

  get size(): { readonly running: number; readonly waiting: number } {
    return { running: this.running.size, waiting: this.allWaiting().length + this.pending.size };
  }

  /**
   * Queues `job` under `id` for `tenant` (default: its group; a lookup that fails counts as the group); a second add of
   * a queued or running id is ignored.
   */
  add(id: string, group: string, job: Job, tenant: string | Promise<string> = group): void {
    if (this.closed || this.has(id)) return;
    if (typeof tenant === 'string') return this.enter({ id, group, tenant, job, abort: new AbortController() });
    const waiting = { id, group, job, abort: new AbortController() };
    this.pending.set(id, waiting);
    void tenant
      .catch(() => group)
      .then((t) => {
        if (this.pending.get(id) !== waiting) return; // cancelled meanwhile
        this.pending.delete(id);
        if (this.closed) return this.settle();
        this.enter({ ...waiting, tenant: t });
      });
  }

  private enter(entry: Entry): void {
    const { tenant } = entry;
    const line = this.waiting.get(tenant);
    if (line) line.push(entry);
    else this.waiting.set(tenant, [entry]);
    this.pump();
  }

  /** Jobs of `group` running now. */
  runningIn(group: string): number {
    return [...this.running.values()].filter((e) => e.group === group).length;
  }

  has(id: string): boolean {
    return this.running.has(id) || this.pending.has(id) || this.allWaiting().some((e) => e.id === id);
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
    if (this.running.size === 0 && this.waiting.size === 0 && this.pending.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Refuses new jobs, drops waiting ones, aborts running ones and waits for them. */
  async close(): Promise<void> {
    this.closed = true;
    await this.stop(() => true);
  }

  private allWaiting(): Entry[] {
    return [...this.waiting.values()].flat();
  }

  private async stop(which: (e: Entry) => boolean): Promise<void> {
    for (const [id, e] of this.pending) if (which({ ...e, tenant: '' })) this.pending.delete(id);
    for (const [tenant, line] of this.waiting) {
      const kept = line.filter((e) => !which(e));
      if (kept.length === 0) this.waiting.delete(tenant);
      else this.waiting.set(tenant, kept);
    }
    const stopping = [...this.running.values()].filter(which);
    for (const e of stopping) e.abort.abort();
    await Promise.all(stopping.map((e) => e.done));
    this.settle();
  }

  /**
   * The first job of the tenant served least recently among those under their bound (round robin: a tenant whose
   * build just started goes to the end of the turn, even with nothing else waiting then).
   */
  private next(): Entry | null {
    const busy = new Map<string, number>();
    for (const e of this.running.values()) busy.set(e.tenant, (busy.get(e.tenant) ?? 0) + 1);
    let pick: string | null = null;
    for (const tenant of this.waiting.keys()) {
      if ((busy.get(tenant) ?? 0) >= this.perTenant) continue;
      if (pick === null || (this.served.get(tenant) ?? 0) < (this.served.get(pick) ?? 0)) pick = tenant;
    }
    if (pick === null) return null;
    const line = this.waiting.get(pick)!;
    const entry = line.shift()!;
    if (line.length === 0) this.waiting.delete(pick);
    this.served.set(pick, ++this.turn);
    return entry;
  }

  private pump(): void {
    while (this.running.size < this.concurrency) {
      const entry = this.next();
      if (entry === null) return;
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
    if (this.running.size === 0 && this.waiting.size === 0 && this.pending.size === 0)
      for (const w of this.idleWaiters.splice(0)) w();
  }
}
