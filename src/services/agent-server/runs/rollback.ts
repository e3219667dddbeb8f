import { copyCheckpoint, uuid6, type BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';

/**
 * Puts a thread's state back to what it was before run `runId` (double-texting `rollback`, or a cancel with
 * `action=rollback`), as the official server does by deleting the run's checkpoints. The run's checkpoints carry its
 * `run_id` in their metadata (run-metadata-checkpointer.ts): the oldest one's parent is the state before the run. A
 * copy of that state becomes the thread's newest checkpoint (`source: "rollback"`), with its pending writes (an
 * interrupt it waited on), so the next run starts from it; the thread's history keeps what happened. A thread the run
 * started empty is emptied. A run that wrote no checkpoint changes nothing.
 */
export async function rollBack(saver: BaseCheckpointSaver, threadId: string, runId: string): Promise<void> {
  let oldest: { parentId: string | null } | null = null;
  for await (const tuple of saver.list(
    { configurable: { thread_id: threadId, checkpoint_ns: '' } },
    { filter: { run_id: runId } },
  )) {
    oldest = { parentId: (tuple.parentConfig?.configurable?.checkpoint_id as string | undefined) ?? null };
  }
  if (oldest === null) return;
  if (oldest.parentId === null) {
    await saver.deleteThread(threadId);
    return;
  }
  const before = await saver.getTuple({
    configurable: { thread_id: threadId, checkpoint_ns: '', checkpoint_id: oldest.parentId },
  });
  const latest = await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: '' } });
  if (before === undefined || latest === undefined) return;
  const copy = { ...copyCheckpoint(before.checkpoint), id: uuid6(-1), ts: new Date().toISOString() };
  const metadata = {
    ...before.metadata,
    source: 'rollback',
    step: (latest.metadata?.step ?? before.metadata?.step ?? 0) + 1,
    parents: {},
    rolled_back_run_id: runId,
  };
  const written = await saver.put(
    {
      configurable: {
        thread_id: threadId,
        checkpoint_ns: '',
        checkpoint_id: latest.config.configurable?.checkpoint_id,
      },
    },
    copy,
    metadata as never,
    copy.channel_versions,
  );
  const byTask = new Map<string, [string, unknown][]>();
  for (const [taskId, channel, value] of before.pendingWrites ?? [])
    byTask.set(taskId, [...(byTask.get(taskId) ?? []), [channel, value]]);
  for (const [taskId, writes] of byTask) await saver.putWrites(written, writes, taskId);
}
