import { InMemoryStore, type BaseStore } from '@langchain/langgraph';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryItemStore } from '../../../../src/services/agent-server/store/memory-item-store.ts';
import { RedisItemStore } from '../../../../src/services/agent-server/store/redis-item-store.ts';
import { PostgresItemStore } from '../../../../src/services/agent-server/store/postgres/postgres-item-store.ts';
import { migratedSchema, ownDatabase, type OwnDatabase } from '../../../helpers/shared-postgres.ts';
import { deleteByPrefix, keysByPrefix } from '../../../helpers/redis-keys.ts';
import { sharedRedis, uniquePrefix } from '../../../helpers/shared-redis.ts';

/**
 * One contract for the long-term memory store: LangGraph's own InMemoryStore
 * states the semantics, and the Redis and PostgreSQL stores must answer every call the same.
 */
const redis = sharedRedis({ maxRetriesPerRequest: 2 });
const prefix = uniquePrefix('test:items');
let db: OwnDatabase;
const pools: pg.Pool[] = [];
beforeAll(async () => {
  db = await ownDatabase();
});
afterAll(async () => {
  await deleteByPrefix(redis, prefix);
  await redis.quit();
  await Promise.all(pools.map((p) => p.end()));
  await db?.drop();
});

let made = 0;
const stores: [string, () => BaseStore | Promise<BaseStore>][] = [
  [
    'PostgresItemStore',
    async () => {
      const { pool } = await migratedSchema(db.uri);
      pools.push(pool);
      return new PostgresItemStore(pool);
    },
  ],
  ['InMemoryStore (the reference)', () => new InMemoryStore()],
  ['RedisItemStore', () => new RedisItemStore(redis, { prefix: `${prefix}:${++made}` })],
  ['MemoryItemStore (InMemoryStore with counts)', () => new MemoryItemStore()],
];

describe.each(stores)('%s', (_, make) => {
  it('put, get, replace (created_at stays, updated_at moves), delete', async () => {
    const store = await make();
    expect(await store.get(['users', 'u1'], 'prefs')).toBeNull();
    await store.put(['users', 'u1'], 'prefs', { theme: 'dark', size: 2 });
    const first = await store.get(['users', 'u1'], 'prefs');
    expect(first).toMatchObject({ namespace: ['users', 'u1'], key: 'prefs', value: { theme: 'dark', size: 2 } });
    const [created, updated] = [new Date(first!.createdAt).getTime(), new Date(first!.updatedAt).getTime()]; // InMemoryStore updates its item in place
    await new Promise((r) => setTimeout(r, 5));
    await store.put(['users', 'u1'], 'prefs', { theme: 'light', tags: [] });
    const second = await store.get(['users', 'u1'], 'prefs');
    expect(second!.value).toEqual({ theme: 'light', tags: [] });
    expect(new Date(second!.createdAt).getTime()).toBe(created);
    expect(new Date(second!.updatedAt).getTime()).toBeGreaterThan(updated);
    await store.delete(['users', 'u1'], 'prefs');
    expect(await store.get(['users', 'u1'], 'prefs')).toBeNull();
    await store.delete(['users', 'u1'], 'never-there');
  });

  it('search: by namespace prefix, value filters and paging', async () => {
    const store = await make();
    await store.put(['docs', 'a'], 'k1', { n: 1, kind: 'note' });
    await store.put(['docs', 'a'], 'k2', { n: 2, kind: 'task' });
    await store.put(['docs', 'b'], 'k3', { n: 3, kind: 'note' });
    await store.put(['docsx'], 'k4', { n: 4, kind: 'note' });
    const keys = async (prefix: string[], options: Parameters<BaseStore['search']>[1] = {}) =>
      (await store.search(prefix, options)).map((i) => i.key);
    expect(await keys(['docs'])).toEqual(['k1', 'k2', 'k3']);
    expect(await keys(['docs', 'a'])).toEqual(['k1', 'k2']);
    expect(await keys([])).toEqual(['k1', 'k2', 'k3', 'k4']);
    expect(await keys(['docs'], { filter: { kind: 'note' } })).toEqual(['k1', 'k3']);
    expect(await keys(['docs'], { filter: { n: { $gte: 2 } } })).toEqual(['k2', 'k3']);
    expect(await keys([], { filter: { kind: { $in: ['task'] } } })).toEqual(['k2']);
    expect(await keys([], { filter: { kind: { $ne: 'note' }, n: { $lt: 3 } } })).toEqual(['k2']);
    expect(await keys([], { limit: 2, offset: 1 })).toEqual(['k2', 'k3']);
    const [hit] = await store.search(['docs', 'b']);
    expect(hit).toMatchObject({ namespace: ['docs', 'b'], key: 'k3', value: { n: 3, kind: 'note' }, score: undefined });
  });

  it('listNamespaces: prefix, suffix, wildcards, depth and paging', async () => {
    const store = await make();
    await store.put(['a', 'b', 'c'], 'k', { v: 1 });
    await store.put(['a', 'b', 'd'], 'k', { v: 1 });
    await store.put(['a', 'x'], 'k', { v: 1 });
    await store.put(['z'], 'k', { v: 1 });
    expect(await store.listNamespaces()).toEqual([['a', 'b', 'c'], ['a', 'b', 'd'], ['a', 'x'], ['z']]);
    expect(await store.listNamespaces({ prefix: ['a', 'b'] })).toEqual([
      ['a', 'b', 'c'],
      ['a', 'b', 'd'],
    ]);
    expect(await store.listNamespaces({ suffix: ['d'] })).toEqual([['a', 'b', 'd']]);
    expect(await store.listNamespaces({ prefix: ['a', '*', 'c'] })).toEqual([['a', 'b', 'c']]);
    expect(await store.listNamespaces({ maxDepth: 2 })).toEqual([['a', 'b'], ['a', 'x'], ['z']]);
    expect(await store.listNamespaces({ limit: 2, offset: 1 })).toEqual([
      ['a', 'b', 'd'],
      ['a', 'x'],
    ]);
  });
});

describe('RedisItemStore', () => {
  it('keeps items in Redis: a second store on the same prefix sees them, another prefix does not', async () => {
    const p = `${prefix}:shared`;
    await new RedisItemStore(redis, { prefix: p }).put(['memories', 'u1'], 'last', { said: 'hello' });
    expect((await new RedisItemStore(redis, { prefix: p }).get(['memories', 'u1'], 'last'))?.value).toEqual({
      said: 'hello',
    });
    expect(await new RedisItemStore(redis, { prefix: `${p}:other` }).get(['memories', 'u1'], 'last')).toBeNull();
  });

  it('lists no namespace whose last item was deleted (InMemoryStore keeps listing it)', async () => {
    const store = new RedisItemStore(redis, { prefix: `${prefix}:emptied` });
    await store.put(['z'], 'k1', { v: 1 });
    await store.put(['z'], 'k2', { v: 1 });
    await store.delete(['z'], 'k1');
    expect(await store.listNamespaces()).toEqual([['z']]);
    await store.delete(['z'], 'k2');
    expect(await store.listNamespaces()).toEqual([]);
    expect(await keysByPrefix(redis, `${prefix}:emptied:`)).toEqual([]);
  });
});
