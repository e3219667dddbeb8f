import type { ServerContext } from '../context.ts';
import type { Run } from '../store/records.ts';

/**
 * Runs whose server is gone. While a server runs a run (recorded `pending`
 * or `running`), it holds the run's lease in the store (run-leases.ts). A run
 * in either status that runs nowhere here and whose lease has lapsed lost
 * its server to a crash or a kill: it is recorded `error`, and its thread,
 * when no other run is on it, leaves `busy` for `error` too, so the thread
 * can run again and nobody waits for a run that will never end.
 * Checked for every run when a server starts, and for a run when it is read.
 */
/** Recorded as queued or running: its server (here or elsewhere) still owes it an outcome. */
export const isUnfinished = (run: Run): boolean => run.status === 'pending' || run.status === 'running';

export async function settleIfOrphaned(ctx: ServerContext, run: Run): Promise<Run> {
  const { store, runner, log } = ctx;
  if (!isUnfinished(run) || runner.find(run.run_id) !== undefined || (await store.held(`run:${run.run_id}`)))
    return run;
  const now = new Date().toISOString();
  const settled: Run = { ...run, status: 'error', updated_at: now };
  await store.putRun(settled);
  const thread = await store.getThread(run.thread_id);
  const others =
    thread === null
      ? []
      : (await store.listRuns(thread.thread_id)).filter((r) => r.run_id !== run.run_id && isUnfinished(r));
  if (thread?.status === 'busy' && others.length === 0)
    await store.putThread({ ...thread, status: 'error', updated_at: now });
  log.warn({ run_id: run.run_id, thread_id: run.thread_id }, 'run lost its server (no lease): recorded as error');
  return settled;
}

/** Settles every orphaned run in the store; how many there were. */
export async function settleOrphans(ctx: ServerContext): Promise<number> {
  let settled = 0;
  for (const thread of await ctx.store.listThreads()) {
    for (const run of await ctx.store.listRuns(thread.thread_id)) {
      if ((await settleIfOrphaned(ctx, run)) !== run) settled++;
    }
  }
  return settled;
}
