import type { Redis } from 'ioredis';
import { StorageTally, utf8, type ThreadStorage } from './storage-tally.ts';

/**
 * What a thread occupies in RedisCheckpointer's keys (layout in redis-checkpointer.ts): the stored value of each
 * checkpoint row (`ckpt:` hash field: JSON with the base64 checkpoint and metadata) and of each write (`writes:` hash
 * field), every namespace included; not Redis's own overhead nor the key and field names. Two round trips: the
 * thread's namespaces and write keys, then every row in one pipeline. The rows are read (not only their lengths),
 * because a checkpoint's channel values lie inside it and are counted apart.
 */
export async function measureRedisThread(client: Redis, base: string, threadId: string): Promise<ThreadStorage> {
  const listed = await client.pipeline().smembers(`${base}ns:${threadId}`).smembers(`${base}wkeys:${threadId}`).exec();
  const [namespaces, writeKeys] = (listed ?? []).map(([err, value]) => {
    if (err) throw err;
    return value as string[];
  }) as [string[], string[]];
  const rows = client.pipeline();
  for (const ns of namespaces) rows.hgetall(`${base}ckpt:${JSON.stringify([threadId, ns])}`);
  for (const key of writeKeys) rows.hgetall(key);
  const hashes = ((await rows.exec()) ?? []).map(([err, value]) => {
    if (err) throw err;
    return value as Record<string, string>;
  });
  const tally = new StorageTally(threadId);
  for (const hash of hashes.slice(0, namespaces.length))
    for (const row of Object.values(hash)) tally.checkpoint(utf8(row), checkpointJson(row), 4 / 3);
  for (const hash of hashes.slice(namespaces.length)) for (const row of Object.values(hash)) tally.write(utf8(row));
  return tally.result();
}

/** The serialized checkpoint of a stored row, decoded, when the serializer wrote it as JSON. */
function checkpointJson(row: string): string | null {
  try {
    const [type, base64] = (JSON.parse(row) as { checkpoint: [string, string] }).checkpoint;
    return type === 'json' ? Buffer.from(base64, 'base64').toString('utf8') : null;
  } catch {
    return null;
  }
}
