import type { ServerContext } from '../context.ts';
import { LEASE_MS } from '../runs/run-leases.ts';

/**
 * Cancels a run of another server: through the relay at once, and through the store (a `cancel:<id>` or
 * `rollback:<id>` lease its server checks at every renewal), should the relay's message be lost.
 */
export async function cancelElsewhere(ctx: ServerContext, runId: string, rollback: boolean): Promise<void> {
  await ctx.store.lease(`${rollback ? 'rollback' : 'cancel'}:${runId}`, LEASE_MS);
  await ctx.relay.cancel(runId, rollback ? 'cancel-rollback' : 'cancel');
}
