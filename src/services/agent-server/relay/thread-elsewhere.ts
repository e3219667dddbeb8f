import type { ServerContext } from '../context.ts';
import { conflict } from '../errors.ts';
import { isUnfinished, settleIfOrphaned } from '../runs/orphans.ts';
import { LEASE_MS } from '../runs/run-leases.ts';
import type { MultitaskStrategy } from '../store/records.ts';

/** What a new run on a thread must do before its turn: nothing, or wait for the thread (`claim`). */
export type ThreadTurn = ((signal: AbortSignal) => Promise<void>) | undefined;

/**
 * One run at a time per thread across the servers sharing a store: before a run starts on a thread that has no run on
 * this server, this server claims the thread through the relay. When another server holds it (a run goes on there),
 * the multitask strategy is obeyed as for a run here: `reject` answers 409, `interrupt` and `rollback` cancel that
 * server's runs of the thread (through the relay, at once), and the new run (like an `enqueue`d one) waits until the
 * thread is released there (woken through the relay) and claimed here. Called with no local run on the thread.
 */
export async function takeThreadTurn(
  ctx: ServerContext,
  threadId: string,
  strategy: MultitaskStrategy,
): Promise<ThreadTurn> {
  const { relay, store, runner } = ctx;
  if (await relay.claimThread(threadId)) return undefined;
  if (strategy === 'reject') {
    throw conflict('Thread is already running a task. Wait for it to finish or choose a different multitask strategy.');
  }
  if (strategy === 'interrupt' || strategy === 'rollback') {
    for (const run of await store.listRuns(threadId)) {
      if (runner.find(run.run_id) !== undefined || !isUnfinished(await settleIfOrphaned(ctx, run))) continue;
      // The store's lease is the fallback, seen at the other server's next renewal, should the message be lost.
      await store.lease(`${strategy === 'rollback' ? 'rollback' : 'cancel'}:${run.run_id}`, LEASE_MS);
      await relay.cancel(run.run_id, strategy);
    }
  }
  return (signal) => relay.awaitThread(threadId, signal);
}
