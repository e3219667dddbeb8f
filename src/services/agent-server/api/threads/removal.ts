import type { ServerContext } from '../../context.ts';
import { isUnfinished } from '../../runs/orphans.ts';
import type { Run } from '../../store/records.ts';
import { cancelElsewhere } from '../../relay/cancel-elsewhere.ts';

/** How long a deletion waits for the thread's runs on other servers to stop (they answer at once through the relay). */
const ELSEWHERE_WAIT_MS = 5000;

/**
 * Deletes a thread for good: its active and queued runs are cancelled and
 * awaited first (a run records its outcome when it stops, which would
 * otherwise bring its record back), the thread's streams end (its legacy
 * stream and its protocol events, held ones included) and its crons go, then the thread and its runs leave the store and its state leaves the
 * checkpointer.
 */
export async function removeThread(ctx: ServerContext, threadId: string): Promise<void> {
  const { store, runner, checkpointer, protocolThreads } = ctx;
  const runs = runner.onThread(threadId);
  for (const run of runs) run.cancel('cancel');
  await Promise.all([...runs.map((run) => run.done.catch(() => undefined)), endRunsElsewhere(ctx, threadId)]);
  runner.threads.end(threadId);
  protocolThreads.drop(threadId);
  for (const cron of await store.listCrons()) if (cron.thread_id === threadId) await store.deleteCron(cron.cron_id);
  await store.deleteThread(threadId);
  // Every BaseCheckpointSaver declares deleteThread; a custom one may still lack it at run time.
  if (typeof checkpointer.deleteThread === 'function') await checkpointer.deleteThread(threadId);
}

/**
 * The thread's runs going on on other servers sharing the store: cancelled (through the relay, at once) and waited for
 * (polling the store, at most ELSEWHERE_WAIT_MS), so none records its outcome after the thread is gone.
 */
async function endRunsElsewhere(ctx: ServerContext, threadId: string): Promise<void> {
  const elsewhere = (runs: Run[]) => runs.filter((r) => isUnfinished(r) && ctx.runner.find(r.run_id) === undefined);
  const runs = elsewhere(await ctx.store.listRuns(threadId));
  if (runs.length === 0 || !ctx.relay.shared) return;
  for (const run of runs) await cancelElsewhere(ctx, run.run_id, false);
  const until = Date.now() + ELSEWHERE_WAIT_MS;
  while (Date.now() < until) {
    const left = await Promise.all(runs.map((r) => ctx.store.getRun(r.run_id)));
    if (left.every((r) => r === null || !isUnfinished(r))) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
