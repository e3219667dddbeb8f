import { afterAll } from 'vitest';
import { MemoryItemStore } from '../../../../src/services/agent-server/store/memory-item-store.ts';
import { RedisItemStore } from '../../../../src/services/agent-server/store/redis-item-store.ts';
import { deleteByPrefix } from '../../../helpers/redis-keys.ts';
import { sharedRedis, uniquePrefix } from '../../../helpers/shared-redis.ts';
import { itemQuotaContract } from './item-quota-contract.ts';

const redis = sharedRedis({ maxRetriesPerRequest: 2 });
const other = sharedRedis({ maxRetriesPerRequest: 2 });
const prefix = uniquePrefix('test:item-quota');
afterAll(async () => {
  await deleteByPrefix(redis, prefix);
  await Promise.all([redis.quit(), other.quit()]);
});

itemQuotaContract('memory', () => new MemoryItemStore());

let made = 0;
const prefixes = new WeakMap<object, string>();
itemQuotaContract(
  'redis',
  () => {
    const p = `${prefix}:${++made}`;
    const store = new RedisItemStore(redis, { prefix: p });
    prefixes.set(store, p);
    return store;
  },
  (store) => new RedisItemStore(other, { prefix: prefixes.get(store)! }),
);
