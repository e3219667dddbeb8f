import { MemorySaver, type BaseCheckpointSaver } from '@langchain/langgraph';
import { AgentPostgresSaver } from './postgres/postgres-checkpointer.ts';
import { RedisCheckpointer } from './redis-checkpointer.ts';
import { StorageTally, utf8, type ThreadStorage } from './storage-tally.ts';

/** MemorySaver's rows of the thread: checkpoint, metadata and parent id; a write's task id, channel, value, path. */
function measureMemorySaver(saver: MemorySaver, threadId: string): ThreadStorage {
  const tally = new StorageTally(threadId);
  const decoder = new TextDecoder();
  for (const checkpoints of Object.values(saver.storage[threadId] ?? {}))
    for (const [checkpoint, metadata, parent] of Object.values(checkpoints))
      tally.checkpoint(checkpoint.byteLength + metadata.byteLength + utf8(parent ?? ''), decoder.decode(checkpoint));
  // Writes are keyed by JSON [thread, namespace, checkpoint id].
  const keyStart = JSON.stringify([threadId]).slice(0, -1) + ',';
  for (const [key, writes] of Object.entries(saver.writes)) {
    if (!key.startsWith(keyStart)) continue;
    for (const [taskId, channel, value, taskPath] of Object.values(writes))
      tally.write(utf8(taskId) + utf8(channel) + value.byteLength + utf8(taskPath ?? ''));
  }
  return tally.result();
}

/**
 * How to measure a thread in `saver`, or null for a checkpointer this server does not know the storage of (one an
 * embedder passed in: `createAgentServer({checkpointer})`).
 */
export function threadStorageReader(saver: BaseCheckpointSaver): ((threadId: string) => Promise<ThreadStorage>) | null {
  if (saver instanceof RedisCheckpointer || saver instanceof AgentPostgresSaver)
    return (threadId) => saver.storageOf(threadId);
  if (saver instanceof MemorySaver) return async (threadId) => measureMemorySaver(saver, threadId);
  return null;
}
