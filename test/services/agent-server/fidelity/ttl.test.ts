import { fileURLToPath } from 'node:url';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { MemorySaver } from '@langchain/langgraph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentServerOptions } from '../../../../src/services/agent-server/app.ts';
import { RedisAgentStore } from '../../../../src/services/agent-server/store/redis-agent-store.ts';
import { RedisCheckpointer } from '../../../../src/services/agent-server/store/redis-checkpointer.ts';
import { RedisItemStore } from '../../../../src/services/agent-server/store/redis-item-store.ts';
import { deleteByPrefix } from '../../../helpers/redis-keys.ts';
import { sharedRedis, uniquePrefix } from '../../../helpers/shared-redis.ts';
import { eventually, newKey, sdk, startStack, userInput, type Stack } from '../helpers.ts';

/**
 * Issue 27, item 2: TTLs on store items and threads, through the edge with the unmodified client, on the memory and
 * the Redis backends alike. TTLs are fractions of a minute (the official schema takes a number) and the sweep runs
 * every 100 ms, so nothing waits minutes; no assertion depends on timing beyond "eventually".
 */
const TODAY_APP = fileURLToPath(new URL('../fixtures/today-app/langgraph.json', import.meta.url));
const prefix = uniquePrefix('test:agent-ttl');
const redis = sharedRedis({ maxRetriesPerRequest: 2 });
afterAll(async () => {
  await deleteByPrefix(redis, prefix);
  await redis.quit();
});

const backends: Record<string, (checkpointer: BaseCheckpointSaver) => Partial<AgentServerOptions>> = {
  memory: () => ({}),
  redis: () => ({
    store: new RedisAgentStore(redis, { prefix }),
    checkpointer: new RedisCheckpointer(redis, { prefix }),
    items: new RedisItemStore(redis, { prefix }),
  }),
};

/** Minutes in `ms` milliseconds. */
const minutes = (ms: number) => ms / 60_000;

for (const [backend, options] of Object.entries(backends)) {
  describe(`TTLs (${backend})`, () => {
    let stack: Stack;
    let checkpointer: BaseCheckpointSaver;
    beforeAll(async () => {
      const given = options(new MemorySaver());
      checkpointer = given.checkpointer ?? new MemorySaver();
      stack = await startStack({
        configPath: TODAY_APP,
        ...given,
        checkpointer,
        ttlSweepMs: 100,
        quotas: { maxStoreItemsPerUser: 2 },
      });
    });
    afterAll(async () => {
      await stack.close();
    });
    const as = (user: string) => sdk(stack.url, newKey(), { 'x-user': user }).client;
    // The app's store handler shows a user only namespaces holding their name.
    const ns = (name: string, user = 'ann') => [user, 'ttl', backend, name];

    it('a store item put with a ttl expires: not read, not searched once it ran out', async () => {
      const client = as('ann');
      await client.store.putItem(ns('brief'), 'k', { v: 1 }, { ttl: minutes(300) });
      await client.store.putItem(ns('brief'), 'stays', { v: 2 });
      expect((await client.store.getItem(ns('brief'), 'k', { refreshTtl: false }))?.value).toEqual({ v: 1 });
      await eventually(async () =>
        (await client.store.getItem(ns('brief'), 'k', { refreshTtl: false })) === null ? true : undefined,
      );
      const found = await client.store.searchItems(ns('brief'), { refreshTtl: false });
      expect(found.items.map((i) => i.key)).toEqual(['stays']);
    });

    it('a read refreshes the ttl by default (getItem and searchItems); refreshTtl: false does not', async () => {
      const client = as('reader');
      const ttl = minutes(2500);
      await client.store.putItem(ns('kept', 'reader'), 'k', { v: 1 }, { ttl });
      await client.store.putItem(ns('left', 'reader'), 'k', { v: 1 }, { ttl });
      // Read for twice the ttl: the read item stays, the other one (read without refresh) goes.
      const until = Date.now() + 5000;
      let reads = 0;
      while (Date.now() < until) {
        const item =
          reads++ % 2 === 0
            ? await client.store.getItem(ns('kept', 'reader'), 'k')
            : (await client.store.searchItems(ns('kept', 'reader'))).items[0];
        expect(item?.value).toEqual({ v: 1 });
        await client.store.getItem(ns('left', 'reader'), 'k', { refreshTtl: false });
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(await client.store.getItem(ns('left', 'reader'), 'k', { refreshTtl: false })).toBeNull();
      await eventually(async () =>
        (await client.store.getItem(ns('kept', 'reader'), 'k', { refreshTtl: false })) === null ? true : undefined,
      );
    });

    it('an expired item leaves the quota: a put refused at the limit passes once it expired', async () => {
      const client = as(`quota-${backend}`);
      await client.store.putItem(ns('quota', `quota-${backend}`), 'a', { v: 1 }, { ttl: minutes(300) });
      await client.store.putItem(ns('quota', `quota-${backend}`), 'b', { v: 1 });
      await expect(client.store.putItem(ns('quota', `quota-${backend}`), 'c', { v: 1 })).rejects.toMatchObject({
        status: 409,
      });
      await eventually(
        async () =>
          (await client.store.putItem(ns('quota', `quota-${backend}`), 'c', { v: 1 }).then(
            () => true,
            () => undefined,
          )) ?? undefined,
      );
    });

    it('refuses a ttl that is not a positive number of minutes', async () => {
      const client = as('ann');
      await expect(client.store.putItem(ns('bad'), 'k', { v: 1 }, { ttl: -1 })).rejects.toMatchObject({
        status: 422,
      });
    });

    it('a thread created with a ttl shows it with include=ttl, then is deleted with its runs and state', async () => {
      const client = as('ann');
      const thread = await client.threads.create({ ttl: { strategy: 'delete', ttl: minutes(1500) } });
      await client.runs.wait(thread.thread_id, 'slow', {
        input: userInput('hi'),
        config: { configurable: { wait_ms: 1 } },
      });
      const shown = (await client.threads.get(thread.thread_id, { include: ['ttl'] })) as unknown as {
        ttl?: { strategy: string; ttl_minutes: number; expires_at: string };
      };
      expect(shown.ttl).toMatchObject({ strategy: 'delete', ttl_minutes: minutes(1500) });
      expect(Date.parse(shown.ttl!.expires_at)).toBeGreaterThan(Date.parse(thread.created_at));
      expect(await client.threads.get(thread.thread_id)).not.toHaveProperty('ttl');
      expect(await checkpointer.getTuple({ configurable: { thread_id: thread.thread_id } })).toBeDefined();
      await eventually(async () =>
        (await client.threads.get(thread.thread_id).then(
          () => undefined,
          (err: { status?: number }) => err.status,
        )) === 404
          ? true
          : undefined,
      );
      await expect(client.runs.list(thread.thread_id)).rejects.toMatchObject({ status: 404 });
      expect(await checkpointer.getTuple({ configurable: { thread_id: thread.thread_id } })).toBeUndefined();
    });

    it('a ttl set by a thread update (a number: the delete strategy) deletes it too; others stay', async () => {
      const client = as('ann');
      const doomed = await client.threads.create();
      const kept = await client.threads.create();
      await client.threads.update(doomed.thread_id, { ttl: minutes(300) });
      await eventually(async () =>
        (await client.threads.get(doomed.thread_id).then(
          () => undefined,
          (err: { status?: number }) => err.status,
        )) === 404
          ? true
          : undefined,
      );
      expect((await client.threads.get(kept.thread_id, { include: ['ttl'] })).thread_id).toBe(kept.thread_id);
    });
  });
}
