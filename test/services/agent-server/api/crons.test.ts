import { randomUUID } from 'node:crypto';
import { MemorySaver } from '@langchain/langgraph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisAgentStore } from '../../../../src/services/agent-server/store/redis-agent-store.ts';
import { deleteByPrefix } from '../../../helpers/redis-keys.ts';
import { eventually, newKey, sdk, startAgentServer, startStack, userInput, type Stack } from '../helpers.ts';
import { sharedRedis, uniquePrefix } from '../../../helpers/shared-redis.ts';

/**
 * Crons (`client.crons`) with the unmodified public client, through the edge; the scheduler ticks every 100 ms and
 * schedules may run every second (MIN_CRON_INTERVAL_SECONDS lowered to 1: cron-quotas.test.ts covers the default).
 */
const EVERY_SECOND = '* * * * * *';
const quotas = { minCronIntervalSeconds: 1 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('crons through the SDK', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ cronTickMs: 100, quotas });
  });
  afterAll(() => stack?.close());

  it('creates, searches, counts, updates and deletes; answers 422 for a bad schedule and 404 for an unknown assistant or thread', async () => {
    const c = sdk(stack.url, newKey()).client;
    const before = Date.now();
    const cron = await c.crons.create('agent', {
      schedule: '*/5 * * * *',
      input: userInput('every five minutes'),
      metadata: { team: 'a' },
    });
    expect(cron).toMatchObject({
      schedule: '*/5 * * * *',
      thread_id: null,
      enabled: true,
      metadata: { team: 'a' },
      user_id: expect.any(String),
    });
    expect(cron).not.toHaveProperty('run_as');
    const next = Date.parse(cron.next_run_date);
    expect(next).toBeGreaterThan(before);
    expect(new Date(next).getUTCMinutes() % 5).toBe(0);

    const found = await c.crons.search({ assistantId: cron.assistant_id, limit: 100 });
    expect(found.map((x) => x.cron_id)).toContain(cron.cron_id);
    expect(await c.crons.count({ assistantId: cron.assistant_id })).toBe(found.length);

    const updated = await c.crons.update(cron.cron_id, {
      schedule: '0 3 * * *',
      enabled: false,
      metadata: { reviewed: true },
    });
    expect(updated).toMatchObject({ schedule: '0 3 * * *', enabled: false, metadata: { team: 'a', reviewed: true } });
    expect(new Date(updated.next_run_date!).getUTCHours()).toBe(3);

    await c.crons.delete(cron.cron_id);
    expect((await c.crons.search({ limit: 100 })).map((x) => x.cron_id)).not.toContain(cron.cron_id);
    await expect(c.crons.delete(cron.cron_id)).rejects.toMatchObject({ status: 404 });

    await expect(c.crons.create('agent', { schedule: 'every minute' })).rejects.toMatchObject({
      status: 422,
      message: expect.stringContaining('schedule'),
    });
    await expect(c.crons.create(randomUUID(), { schedule: '* * * * *' })).rejects.toMatchObject({ status: 404 });
    await expect(c.crons.createForThread(randomUUID(), 'agent', { schedule: '* * * * *' })).rejects.toMatchObject({
      status: 404,
    });
  });

  it('starts runs on its thread when due, until deleted; the thread going deletes its crons', async () => {
    const c = sdk(stack.url, newKey()).client;
    const thread = await c.threads.create();
    const cron = await c.crons.createForThread(thread.thread_id, 'agent', {
      schedule: EVERY_SECOND,
      input: userInput('tick'),
    });
    const runs = await eventually(async () => {
      const list = await c.runs.list(thread.thread_id);
      return list.filter((r) => r.status === 'success').length >= 2 ? list : undefined;
    });
    expect(runs.every((r) => r.metadata?.assistant_id === cron.assistant_id)).toBe(true);
    const said = (
      (await c.threads.getState(thread.thread_id)).values as { messages: { content: string }[] }
    ).messages.map((m) => m.content);
    expect(said.filter((m) => m === 'tick').length).toBeGreaterThanOrEqual(2);

    await c.crons.delete(cron.cron_id);
    await sleep(300); // a run started just before the delete may still be recorded
    const after = (await c.runs.list(thread.thread_id, { limit: 100 })).length;
    await sleep(1500);
    expect((await c.runs.list(thread.thread_id, { limit: 100 })).length).toBe(after);

    const again = await c.crons.createForThread(thread.thread_id, 'agent', { schedule: '0 0 1 1 *' });
    await c.threads.delete(thread.thread_id);
    expect((await c.crons.search({ limit: 100 })).map((x) => x.cron_id)).not.toContain(again.cron_id);
  });

  it('runs threadless as its creator (the graph sees the same user and store namespace each time); disabled or ended crons start nothing', async () => {
    const c = sdk(stack.url, newKey()).client;
    const cron = await c.crons.create('remember', { schedule: EVERY_SECOND, input: userInput('from the cron') });
    const mine = await eventually(async () => {
      const namespaces = (await c.store.listNamespaces({ prefix: ['memories', cron.user_id] })).namespaces;
      if (namespaces.length === 0) return undefined;
      const items = (await c.store.searchItems(namespaces[0]!, { limit: 100 })).items;
      return items.length >= 2 ? items : undefined;
    });
    expect(mine.every((item) => item.value.said === 'from the cron')).toBe(true);
    await c.crons.delete(cron.cron_id);

    const disabled = await c.crons.create('remember', {
      schedule: EVERY_SECOND,
      input: userInput('never'),
      enabled: false,
    });
    const ended = await c.crons.create('remember', {
      schedule: EVERY_SECOND,
      input: userInput('never'),
      enabled: false,
    });
    const past = await c.crons.update(ended.cron_id, {
      endTime: new Date(Date.now() - 1000).toISOString(),
      enabled: true,
    });
    expect(past.next_run_date).toBeNull();
    await sleep(1500);
    const said = async () => {
      const namespaces = (await c.store.listNamespaces({ prefix: ['memories'] })).namespaces;
      const items = await Promise.all(
        namespaces.map(async (ns) => (await c.store.searchItems(ns, { limit: 1000 })).items),
      );
      return items.flat().map((i) => i.value.said);
    };
    expect(await said()).not.toContain('never');
    await c.crons.delete(disabled.cron_id);
    await c.crons.delete(ended.cron_id);
  });
});

describe('crons on two servers sharing one Redis store', () => {
  const redis = sharedRedis({ maxRetriesPerRequest: 2 });
  const prefix = uniquePrefix('test:crons');
  afterAll(async () => {
    await deleteByPrefix(redis, prefix);
    await redis.quit();
  });

  it('each due time starts one run, not one per server', async () => {
    const checkpointer = new MemorySaver();
    // Ticks are driven by the test: both servers look at the same due cron at the same moment.
    const servers = await Promise.all(
      [0, 1].map(() =>
        startAgentServer({
          store: new RedisAgentStore(redis, { prefix }),
          checkpointer,
          cronTickMs: 3_600_000,
          quotas,
        }),
      ),
    );
    try {
      const c = sdk(servers[0]!.url, newKey()).client;
      const thread = await c.threads.create();
      const cron = await c.crons.createForThread(thread.thread_id, 'uncompiled', {
        schedule: EVERY_SECOND,
        input: userInput('once'),
      });
      for (let due = 1; due <= 3; due++) {
        const now = new Date(Date.parse((await c.crons.search({ threadId: thread.thread_id }))[0]!.next_run_date!) + 1);
        await Promise.all(servers.map((s) => s.server.crons.fireDue(now)));
        await eventually(async () =>
          (await c.runs.list(thread.thread_id)).filter((r) => r.status === 'success').length === due ? true : undefined,
        );
      }
      await sleep(200);
      expect(await c.runs.list(thread.thread_id, { limit: 100 })).toHaveLength(3);
      await c.crons.delete(cron.cron_id);
    } finally {
      await Promise.all(servers.map((s) => s.close()));
    }
  });
});
