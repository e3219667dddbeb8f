import { afterAll } from 'vitest';
import { MemoryItemStore } from '../../../../src/services/agent-server/store/memory-item-store.ts';
import { RedisItemStore } from '../../../../src/services/agent-server/store/redis-item-store.ts';
import { deleteByPrefix } from '../../../helpers/redis-keys.ts';
import { sharedRedis, uniquePrefix } from '../../../helpers/shared-redis.ts';
import { itemTtlContract } from './item-ttl-contract.ts';

const redis = sharedRedis({ maxRetriesPerRequest: 2 });
const prefix = uniquePrefix('test:item-ttl');
afterAll(async () => {
  await deleteByPrefix(redis, prefix);
  await redis.quit();
});

itemTtlContract('memory', (now) => new MemoryItemStore({ now }));
let made = 0;
itemTtlContract('redis', (now) => new RedisItemStore(redis, { prefix: `${prefix}:${++made}`, now }));
