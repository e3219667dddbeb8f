import type { Logger } from 'pino';
import type { AgentStore } from '../store/agent-store.ts';
import type { RunHandle } from './run-handle.ts';

/**
 * How long a run's lease lasts; its server renews it (and looks for a cancel from another server) every LEASE_MS /
 * RENEWALS.
 */
export const LEASE_MS = 10_000;
const RENEWALS = 5;

/**
 * Renews the lease of every run going on here (`run:<id>` in the store, so other servers see the run has a server),
 * every LEASE_MS / RENEWALS, and cancels the runs another server asked to cancel (a `cancel:<id>` lease; `rollback:<id>`
 * for a cancel with `action=rollback`).
 */
export class LeaseRenewals {
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly store: AgentStore,
    private readonly log: Logger,
    private readonly running: () => Iterable<RunHandle>,
  ) {
    this.timer = setInterval(() => void this.renewLeases(), LEASE_MS / RENEWALS).unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Renews the lease of every run going on here, and cancels those another server asked to cancel. */
  private async renewLeases(): Promise<void> {
    const { store, log } = this;
    for (const handle of this.running()) {
      try {
        await store.lease(`run:${handle.runId}`, LEASE_MS);
        if (await store.held(`cancel:${handle.runId}`)) handle.cancel('cancel');
        else if (await store.held(`rollback:${handle.runId}`)) handle.cancel('cancel-rollback');
      } catch (err) {
        log.warn({ run_id: handle.runId, err: (err as Error).message }, 'could not renew the lease of a run');
      }
    }
  }
}
