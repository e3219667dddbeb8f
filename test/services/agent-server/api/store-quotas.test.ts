import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { AgentQuotas } from '../../../../src/services/agent-server/quotas.ts';
import { RedisItemStore } from '../../../../src/services/agent-server/store/redis-item-store.ts';
import { deleteByPrefix } from '../../../helpers/redis-keys.ts';
import { sharedRedis, uniquePrefix } from '../../../helpers/shared-redis.ts';
import { EXAMPLE_APP, newKey, sdk, startAgentServer, type RunningAgentServer } from '../helpers.ts';

/**
 * Issue 25, "store items up to 10 MiB each with no quota grow the gateway's heap": with the unmodified public client,
 * a value over MAX_STORE_VALUE_BYTES answers 413, and items or bytes over MAX_STORE_ITEMS / MAX_STORE_BYTES (or their
 * per-user forms under custom auth) answer 409 `Quota exceeded (store_…)`; neither stores anything. In memory and in
 * Redis.
 */
const redis = sharedRedis();
const PREFIX = uniquePrefix('test:store-quotas');
afterAll(async () => {
  await deleteByPrefix(redis, PREFIX);
  await redis.quit();
});

let agent: RunningAgentServer | undefined;
afterEach(async () => {
  await agent?.close();
  agent = undefined;
});

const backends = [
  { name: 'memory', items: () => ({}) },
  { name: 'redis', items: () => ({ items: new RedisItemStore(redis, { prefix: `${PREFIX}:${randomUUID()}` }) }) },
] as const;

describe.each(backends)('store quotas ($name)', ({ items }) => {
  const start = async (quotas: Partial<AgentQuotas>, configPath?: string) => {
    agent = await startAgentServer({ quotas, ...items(), ...(configPath && { configPath }) });
    return agent;
  };

  it('a value over MAX_STORE_VALUE_BYTES (default 1 MiB) answers 413 and stores nothing', async () => {
    const server = await start({});
    const { client } = sdk(server.url, newKey());
    // Over plain HTTP: the public client retries a 413 with backoff (about 25 s) before it gives up.
    const res = await fetch(`${server.url}/store/items`, {
      method: 'PUT',
      headers: { 'x-api-key': newKey(), 'content-type': 'application/json' },
      body: JSON.stringify({ namespace: ['docs'], key: 'big', value: { text: 'x'.repeat(1024 * 1024) } }),
    });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { detail: string }).detail).toMatch(
      /^Store item too large \(store_value_bytes\): its value is 1048587 bytes as JSON, more than MAX_STORE_VALUE_BYTES \(1048576\)/,
    );
    expect(await client.store.getItem(['docs'], 'big')).toBeNull();
    await client.store.putItem(['docs'], 'small', { text: 'x'.repeat(1000) });
  });

  it('MAX_STORE_ITEMS and MAX_STORE_BYTES: 409 in the {detail} shape, nothing stored; a replacement no larger passes; a delete frees', async () => {
    const server = await start({ maxStoreItems: 3, maxStoreBytes: 4096 });
    const { client } = sdk(server.url, newKey());
    for (const key of ['a', 'b', 'c']) await client.store.putItem(['docs'], key, { n: key });
    const res = await fetch(`${server.url}/store/items`, {
      method: 'PUT',
      headers: { 'x-api-key': newKey(), 'content-type': 'application/json' },
      body: JSON.stringify({ namespace: ['docs'], key: 'd', value: { n: 'd' } }),
    });
    expect(res.status).toBe(409);
    const body = (await res.json()) as { detail: string };
    expect(Object.keys(body)).toEqual(['detail']);
    expect(body.detail).toMatch(/^Quota exceeded \(store_items\): this server holds 3 items; MAX_STORE_ITEMS allows 3/);
    expect(await client.store.getItem(['docs'], 'd')).toBeNull();
    await client.store.putItem(['docs'], 'a', { n: 'A' });
    await client.store.deleteItem(['docs'], 'c');
    await client.store.putItem(['docs'], 'd', { n: 'd' });

    await expect(client.store.putItem(['docs'], 'a', { text: 'x'.repeat(5000) })).rejects.toThrow(
      /Quota exceeded \(store_bytes\): .*MAX_STORE_BYTES allows 4096/,
    );
    expect((await client.store.getItem(['docs'], 'a'))?.value).toEqual({ n: 'A' });
  });

  it('with custom auth each user has MAX_STORE_ITEMS_PER_USER and MAX_STORE_BYTES_PER_USER of their own', async () => {
    const server = await start({ maxStoreItemsPerUser: 2, maxStoreBytesPerUser: 2000 }, EXAMPLE_APP);
    const as = (token: string) => sdk(server.url, newKey(), { authorization: `Bearer ${token}` }).client;
    const alice = as('alice-token');
    const bob = as('bob-token');
    await alice.store.putItem(['alice'], 'a', { n: 1 });
    await alice.store.putItem(['alice'], 'b', { n: 2 });
    await expect(alice.store.putItem(['alice'], 'c', { n: 3 })).rejects.toThrow(
      /Quota exceeded \(store_items_per_user\): user alice holds 2 items; MAX_STORE_ITEMS_PER_USER allows 2/,
    );
    await bob.store.putItem(['bob'], 'a', { n: 1 });
    await expect(bob.store.putItem(['bob'], 'b', { text: 'x'.repeat(2500) })).rejects.toMatchObject({ status: 409 });
    await expect(bob.store.putItem(['bob'], 'b', { text: 'x'.repeat(2500) })).rejects.toThrow(/store_bytes_per_user/);
    await alice.store.deleteItem(['alice'], 'a');
    await alice.store.putItem(['alice'], 'c', { n: 3 });
    expect(await bob.store.getItem(['bob'], 'b')).toBeNull();
  });
});
