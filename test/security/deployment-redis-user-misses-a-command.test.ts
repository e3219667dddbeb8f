import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll } from 'vitest';
import {
  deploymentRedisUrl,
  deploymentUserName,
  deploymentUserRules,
} from '../../src/services/control-plane/serving/redis-acl-rules.ts';
import { RedisAgentStore } from '../../src/services/agent-server/store/redis-agent-store.ts';
import { RedisCheckpointer } from '../../src/services/agent-server/store/redis-checkpointer.ts';
import { RedisItemStore } from '../../src/services/agent-server/store/redis-item-store.ts';
import { loadItemFunctions } from '../../src/services/agent-server/store/item-functions.ts';
import { startRedis } from '../../support/redis-server.ts';
import { storeContract } from '../services/agent-server/store/agent-store-contract.ts';
import { itemQuotaContract } from '../services/agent-server/store/item-quota-contract.ts';
import { itemTtlContract } from '../services/agent-server/store/item-ttl-contract.ts';
import { threadStorageContract } from '../services/agent-server/store/thread-storage-contract.ts';

/**
 * A deployment's Redis user may send only the commands its stores send (redis-acl-rules.ts). The store quotas added
 * scripts (EVALSHA, HINCRBY) that list did not have, and every store write of a deployed app answered 500 while the
 * stores' own tests, run as the platform's user, stayed green; item TTLs did it again (ZSCORE, ZRANGEBYSCORE). The
 * stores' contracts run here as that user, and the checkpointer's thread storage (`GET /threads/{id}/storage`) with its
 * writes and deletes.
 */
const server = await startRedis();
const admin = new Redis(server.url, { maxRetriesPerRequest: 2 });
const dataPrefix = 'deployment:d1';
const password = randomBytes(16).toString('hex');
const user = deploymentUserName('d1');
await admin.call('ACL', 'SETUSER', user, ...deploymentUserRules(dataPrefix, password));
// The control plane loads the item store's functions before a revision starts (its user may not).
await loadItemFunctions(admin);
// enableReadyCheck off: the ready check sends INFO, which the user may not.
const asDeployment = () =>
  new Redis(deploymentRedisUrl(server.url, user, password), { maxRetriesPerRequest: 2, enableReadyCheck: false });
const clients = [asDeployment(), asDeployment()] as const;

afterAll(async () => {
  await Promise.all([admin, ...clients].map((c) => c.quit()));
  await server.stop();
});

let made = 0;
storeContract('redis, as a deployment user', () =>
  Promise.resolve(new RedisAgentStore(clients[0], { prefix: `${dataPrefix}:store${++made}` })),
);

const prefixes = new WeakMap<object, string>();
itemQuotaContract(
  'redis, as a deployment user',
  () => {
    const prefix = `${dataPrefix}:items${++made}`;
    const store = new RedisItemStore(clients[0], { prefix });
    prefixes.set(store, prefix);
    return store;
  },
  (store) => new RedisItemStore(clients[1], { prefix: prefixes.get(store)! }),
);

itemTtlContract(
  'redis, as a deployment user',
  (now) => new RedisItemStore(clients[0], { prefix: `${dataPrefix}:ttl${++made}`, now }),
);

threadStorageContract(
  'redis, as a deployment user',
  () => new RedisCheckpointer(clients[0], { prefix: `${dataPrefix}:cp${++made}` }),
  (n) => Math.round((n * 4) / 3),
);
