import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll } from 'vitest';
import { RedisCheckpointer } from '../../../../src/services/agent-server/store/redis-checkpointer.ts';
import { RedisAgentStore } from '../../../../src/services/agent-server/store/redis-agent-store.ts';
import { deleteByPrefix } from '../../../helpers/redis-keys.ts';
import { fidelityCases } from './cases.ts';

/** The same cases over the Redis store and checkpointer, on the shared Redis (6379) under a prefix of this run. */
const prefix = `test-agent-fidelity-${randomUUID()}`;
const redis = new Redis({ host: '127.0.0.1', port: 6379, maxRetriesPerRequest: 2 });

afterAll(async () => {
  await deleteByPrefix(redis, prefix);
  await redis.quit();
});

fidelityCases('redis store', async () => ({
  store: new RedisAgentStore(redis, { prefix }),
  checkpointer: new RedisCheckpointer(redis, { prefix }),
}));
