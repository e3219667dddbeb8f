import type { ServerContext } from '../../context.ts';

/**
 * Deletes a thread for good: its active and queued runs are cancelled and
 * awaited first (a run records its outcome when it stops, which would
 * otherwise bring its record back), the thread's streams end (its legacy
 * stream and its protocol events, held ones included) and its crons go, then the thread and its runs leave the store and its state leaves the
 * checkpointer.
 */
export async function removeThread(
  { store, runner, checkpointer, protocolThreads }: ServerContext,
  threadId: string,
): Promise<void> {
  const runs = runner.onThread(threadId);
  for (const run of runs) run.cancel('cancel');
  await Promise.all(runs.map((run) => run.done.catch(() => undefined)));
  runner.threads.end(threadId);
  protocolThreads.drop(threadId);
  for (const cron of await store.listCrons()) if (cron.thread_id === threadId) await store.deleteCron(cron.cron_id);
  await store.deleteThread(threadId);
  // Every BaseCheckpointSaver declares deleteThread; a custom one may still lack it at run time.
  if (typeof checkpointer.deleteThread === 'function') await checkpointer.deleteThread(threadId);
}
