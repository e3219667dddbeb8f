import { afterAll } from 'vitest';
import { RedisCheckpointer } from '../../../../src/services/agent-server/store/redis-checkpointer.ts';
import { RedisAgentStore } from '../../../../src/services/agent-server/store/redis-agent-store.ts';
import { deleteByPrefix } from '../../../helpers/redis-keys.ts';
import { fidelityCases } from './cases.ts';
import { sharedRedis, uniquePrefix } from '../../../helpers/shared-redis.ts';

/** The same cases over the Redis store and checkpointer, on the shared Redis under a prefix of this run. */
const prefix = uniquePrefix('test-agent-fidelity');
const redis = sharedRedis({ maxRetriesPerRequest: 2 });

afterAll(async () => {
  await deleteByPrefix(redis, prefix);
  await redis.quit();
});

fidelityCases('redis store', async () => ({
  store: new RedisAgentStore(redis, { prefix }),
  checkpointer: new RedisCheckpointer(redis, { prefix }),
}));
