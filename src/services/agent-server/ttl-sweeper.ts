import type { ServerContext } from './context.ts';
import { removeThread } from './api/threads/removal.ts';

/**
 * Sweeps what has outlived its TTL, every `everyMs`: store items (the item store deletes them with their counts;
 * reads already skip them) and threads whose `ttl.expires_at` has passed, deleted as DELETE /threads/{id} deletes
 * them (runs cancelled, crons, runs and checkpoints gone). With several servers on one store, each expired thread is
 * claimed, so one server removes it.
 */
export class TtlSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<{ items: number; threads: number }> | null = null;

  constructor(
    private readonly ctx: ServerContext,
    private readonly everyMs = 60_000,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.sweep().catch((err: unknown) => this.ctx.log.warn({ err }, 'TTL sweep failed; tried again next time'));
    }, this.everyMs);
    this.timer.unref();
  }

  /** One sweep now (one at a time: a call during a sweep gets that sweep's answer); what it removed. */
  sweep(): Promise<{ items: number; threads: number }> {
    this.running ??= this.sweepOnce().finally(() => (this.running = null));
    return this.running;
  }

  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
  }

  private async sweepOnce(): Promise<{ items: number; threads: number }> {
    const items = await this.ctx.items.sweep();
    const now = Date.now();
    let threads = 0;
    for (const thread of await this.ctx.store.listThreads()) {
      if (thread.ttl === undefined || Date.parse(thread.ttl.expires_at) > now) continue;
      if (!(await this.ctx.store.claim(`ttl:${thread.thread_id}`, 60_000))) continue;
      await removeThread(this.ctx, thread.thread_id);
      threads += 1;
    }
    if (items + threads > 0) this.ctx.log.debug({ items, threads }, 'TTL sweep removed what expired');
    return { items, threads };
  }
}
