import type { BaseCheckpointSaver, CheckpointTuple } from '@langchain/langgraph-checkpoint';

/**
 * Copies a thread's state to another thread: every checkpoint of `from`
 * (every namespace, so subgraphs too), oldest first, with its parent link
 * and pending writes, through the checkpointer's own `put`/`putWrites`, so
 * any checkpointer works. The copy's history matches the original's, and
 * the two threads go their own ways afterwards.
 */
export async function copyCheckpoints(saver: BaseCheckpointSaver, from: string, to: string): Promise<void> {
  const tuples: CheckpointTuple[] = [];
  for await (const tuple of saver.list({ configurable: { thread_id: from } })) tuples.push(tuple);
  for (const { config, checkpoint, metadata, parentConfig, pendingWrites } of tuples.reverse()) {
    const parentId = parentConfig?.configurable?.checkpoint_id as string | undefined;
    const target = {
      configurable: {
        thread_id: to,
        checkpoint_ns: config.configurable?.checkpoint_ns ?? '',
        ...(parentId ? { checkpoint_id: parentId } : {}),
      },
    };
    const copiedMetadata = metadata && 'thread_id' in metadata ? { ...metadata, thread_id: to } : metadata;
    const written = await saver.put(
      target,
      checkpoint,
      copiedMetadata ?? { source: 'update', step: -1, parents: {} },
      // Every channel as new: a checkpointer that keeps values apart (PostgresSaver) writes them only then.
      checkpoint.channel_versions,
    );
    const byTask = new Map<string, [string, unknown][]>();
    for (const [taskId, channel, value] of pendingWrites ?? [])
      byTask.set(taskId, [...(byTask.get(taskId) ?? []), [channel, value]]);
    for (const [taskId, writes] of byTask) await saver.putWrites(written, writes, taskId);
  }
}
