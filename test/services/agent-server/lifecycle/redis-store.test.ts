import { afterAll } from 'vitest';
import { RedisCheckpointer } from '../../../../src/services/agent-server/store/redis-checkpointer.ts';
import { RedisAgentStore } from '../../../../src/services/agent-server/store/redis-agent-store.ts';
import { deleteByPrefix, keysByPrefix } from '../../../helpers/redis-keys.ts';
import { lifecycleCases } from './cases.ts';
import { sharedRedis, uniquePrefix } from '../../../helpers/shared-redis.ts';

/**
 * The same cases over the Redis store and checkpointer, on the shared Redis
 * under a prefix of this run, removed afterwards (never a flush).
 * A deleted thread must leave no key naming it.
 */
const prefix = uniquePrefix('test-agent-lifecycle');
const redis = sharedRedis({ maxRetriesPerRequest: 2 });

afterAll(async () => {
  await deleteByPrefix(redis, prefix);
  await redis.quit();
});

lifecycleCases('redis store', async () => ({
  store: new RedisAgentStore(redis, { prefix }),
  checkpointer: new RedisCheckpointer(redis, { prefix }),
  leftovers: async (threadId) => (await keysByPrefix(redis, `${prefix}:`)).filter((k) => k.includes(threadId)),
}));
