import type { ServerContext } from '../context.ts';
import { isUnfinished, settleIfOrphaned } from './orphans.ts';

/** How often every server looks for runs whose server died (with a shared relay only). */
export const ORPHAN_SWEEP_MS = 5000;

/**
 * Every ORPHAN_SWEEP_MS, on every server sharing a store: the runs the relay says go on somewhere, and that do not go on
 * here, are read; one whose lease has lapsed lost its server and is settled (orphans.ts), and one that has ended (or is
 * gone) leaves the relay's list. So a run whose server was killed is settled, and its thread leaves `busy`, within
 * LEASE_MS + ORPHAN_SWEEP_MS of the kill, on whichever server sweeps first. Alone (the in-process relay) nothing can
 * be orphaned while the server runs: the sweep at start is enough, and this one does nothing.
 */
export class OrphanSweep {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | null = null;

  constructor(
    private readonly ctx: ServerContext,
    private readonly everyMs = ORPHAN_SWEEP_MS,
  ) {}

  start(): void {
    if (!this.ctx.relay.shared) return;
    this.timer = setInterval(() => void this.sweep(), this.everyMs).unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.sweeping;
  }

  /** One sweep (none while the last one goes on). */
  sweep(): Promise<void> {
    this.sweeping ??= this.sweepOnce()
      .catch((err: unknown) => this.ctx.log.warn({ err: (err as Error).message }, 'orphan sweep failed'))
      .finally(() => (this.sweeping = null));
    return this.sweeping;
  }

  private async sweepOnce(): Promise<void> {
    const { store, runner, relay } = this.ctx;
    for (const runId of await relay.live()) {
      if (runner.find(runId) !== undefined) continue;
      const run = await store.getRun(runId);
      if (run === null || !isUnfinished(await settleIfOrphaned(this.ctx, run))) await relay.forget(runId);
    }
  }
}
