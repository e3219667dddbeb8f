import { MemorySaver } from '@langchain/langgraph';
import { afterAll } from 'vitest';
import { RedisCheckpointer } from '../../../../src/services/agent-server/store/redis-checkpointer.ts';
import { deleteByPrefix } from '../../../helpers/redis-keys.ts';
import { sharedRedis, uniquePrefix } from '../../../helpers/shared-redis.ts';
import { threadStorageContract } from './thread-storage-contract.ts';

/** The thread storage contract on the server's two checkpointers. */
const redis = sharedRedis({ maxRetriesPerRequest: 2 });
const prefix = uniquePrefix('test:cp-storage');
afterAll(async () => {
  await deleteByPrefix(redis, prefix);
  await redis.quit();
});

threadStorageContract(
  'MemorySaver',
  () => new MemorySaver(),
  (n) => n,
);
// Redis keeps the serialized checkpoint base64-encoded: a channel's JSON takes 4/3 of its bytes there.
threadStorageContract(
  'RedisCheckpointer',
  () => new RedisCheckpointer(redis, { prefix }),
  (n) => Math.round((n * 4) / 3),
);
