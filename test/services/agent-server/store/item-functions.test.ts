import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { ITEM_FUNCTIONS } from '../../../../src/services/agent-server/store/item-functions.ts';
import { RedisItemStore } from '../../../../src/services/agent-server/store/redis-item-store.ts';
import {
  deploymentRedisUrl,
  deploymentUserRules,
} from '../../../../src/services/control-plane/serving/redis-acl-rules.ts';
import { startRedis } from '../../../../support/redis-server.ts';

/**
 * The item store's functions (item-functions.ts) on a Redis that has never seen them: the platform's client loads
 * them itself on first use; a deployment's user may not, and gets Redis's own error (its control plane loads them
 * before the revision starts). Deleting still works over `maxmemory`.
 */
const server = await startRedis();
const admin = new Redis(server.url, { maxRetriesPerRequest: 1 });
afterAll(async () => {
  admin.disconnect();
  await server.stop();
});

describe('the item store\u2019s Redis Functions', () => {
  it('a deployment user cannot load them: the first error, not a NOPERM of FUNCTION LOAD', async () => {
    const password = randomBytes(8).toString('hex');
    await admin.call('ACL', 'SETUSER', 'dep', ...deploymentUserRules('deployment:d', password));
    const asUser = new Redis(deploymentRedisUrl(server.url, 'dep', password), { enableReadyCheck: false });
    const store = new RedisItemStore(asUser, { prefix: 'deployment:d' });
    await expect(store.put(['n'], 'k', { a: 1 })).rejects.toThrow(/Function not found/);
    asUser.disconnect();
  });

  it('the platform\u2019s client loads them on first use; over maxmemory a delete still runs, a put does not', async () => {
    const store = new RedisItemStore(admin, { prefix: 'agent' });
    await store.put(['n'], 'k', { a: 1 });
    expect((await store.get(['n'], 'k'))?.value).toEqual({ a: 1 });
    expect(((await admin.call('FUNCTION', 'LIST')) as unknown[]).length).toBe(1);
    await admin.config('SET', 'maxmemory', '1');
    try {
      await expect(store.put(['n'], 'k2', { a: 2 })).rejects.toThrow(/OOM/);
      await store.delete(['n'], 'k');
      expect(await store.get(['n'], 'k')).toBeNull();
    } finally {
      await admin.config('SET', 'maxmemory', '0');
    }
    expect(ITEM_FUNCTIONS.put).toMatch(/^gw_items_[0-9a-f]{12}_put$/);
  });
});
