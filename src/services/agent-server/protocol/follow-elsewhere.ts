import type { ServerContext } from '../context.ts';
import { findAssistant } from '../api/assistants/lookup.ts';
import { relayedRun, runningElsewhere } from '../relay/remote-runs.ts';
import { followRun } from './follow-run.ts';
import type { ProtocolThread } from './threads.ts';

/**
 * A reader opened the thread's protocol events here while a protocol run of the thread goes on on another server:
 * that run's frames, from its first one still held (read from the relay), become this server's events of the thread,
 * as if the run were here (follow-run.ts), so the reader replays and follows it. Each run once per thread.
 */
export async function followProtocolRunElsewhere(ctx: ServerContext, thread: ProtocolThread): Promise<void> {
  const run = await runningElsewhere(ctx, thread.threadId);
  if (run === null || thread.currentRunId === run.run_id) return;
  if ((run.kwargs as { protocol?: unknown } | null)?.protocol !== true) return;
  const assistant = await findAssistant(ctx.store, ctx.graphs, run.assistant_id);
  if (thread.currentRunId === run.run_id) return; // another reader brought it meanwhile
  thread.currentRunId = run.run_id;
  thread.assistantId = run.assistant_id;
  thread.events.newRun();
  void followRun(thread, relayedRun(ctx, run, 0), assistant?.graph_id ?? 'root', ctx.store).catch((err: unknown) =>
    ctx.log.error({ run_id: run.run_id, err: { message: (err as Error)?.message } }, 'protocol events of a run lost'),
  );
}
