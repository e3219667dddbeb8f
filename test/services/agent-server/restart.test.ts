import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisCheckpointer } from '../../../src/services/agent-server/store/redis-checkpointer.ts';
import { RedisItemStore } from '../../../src/services/agent-server/store/redis-item-store.ts';
import { RedisAgentStore } from '../../../src/services/agent-server/store/redis-agent-store.ts';
import { startRedis, type RedisProcess } from '../../../support/redis-server.ts';
import { EXAMPLE_API_KEY_APP, newKey, startAgentServer, userInput, type RunningAgentServer } from './helpers.ts';

/**
 * With the Redis store and checkpointer, an Agent Server that is closed and
 * started again (new process state, new Redis connection, same Redis) still
 * has its threads, their runs and their values, and its long-term store. A private redis-server, so
 * nothing touches the shared one.
 */
let redisServer: RedisProcess;
const clients: Redis[] = [];
const key = newKey('acme');

beforeAll(async () => {
  redisServer = await startRedis();
});
afterAll(async () => {
  for (const c of clients) c.disconnect();
  await redisServer?.stop();
});

async function start(): Promise<{ agent: RunningAgentServer; redis: Redis }> {
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: 2 });
  clients.push(redis);
  const agent = await startAgentServer({
    configPath: EXAMPLE_API_KEY_APP,
    store: new RedisAgentStore(redis, { prefix: 'agent' }),
    checkpointer: new RedisCheckpointer(redis, { prefix: 'agent' }),
    items: new RedisItemStore(redis, { prefix: 'agent' }),
  });
  return { agent, redis };
}

async function call(
  agent: RunningAgentServer,
  path: string,
  body?: unknown,
  method = body === undefined ? 'GET' : 'POST',
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${agent.url}${path}`, {
    method,
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: res.status === 204 ? null : await res.json() };
}

const texts = (values: any): string[] => (values.messages as { content: string }[]).map((m) => m.content);

describe('agent server restart over Redis', () => {
  it('keeps the thread, its runs and its state values, and the conversation continues', async () => {
    const first = await start();
    const created = await call(first.agent, '/threads', { metadata: { purpose: 'restart' } });
    expect(created.status).toBe(200);
    const threadId = created.body.thread_id as string;
    const ran = await call(first.agent, `/threads/${threadId}/runs/wait`, {
      assistant_id: 'agent',
      input: userInput('hello there'),
    });
    expect(ran.status).toBe(200);
    const before = await call(first.agent, `/threads/${threadId}/state`);
    expect(before.status).toBe(200);
    const messagesBefore = texts(before.body.values);
    expect(messagesBefore[0]).toBe('hello there');
    expect(messagesBefore).toContain('Hello, acme!');
    expect(messagesBefore.length).toBeGreaterThanOrEqual(3);
    const assistantsBefore = (await call(first.agent, '/assistants/search', {})).body as { assistant_id: string }[];
    expect(
      (
        await call(
          first.agent,
          '/store/items',
          { namespace: ['memories', 'acme'], key: 'k', value: { kept: true } },
          'PUT',
        )
      ).status,
    ).toBe(204);
    await first.agent.close();
    await first.redis.quit();

    const second = await start();
    try {
      const thread = await call(second.agent, `/threads/${threadId}`);
      expect(thread.status).toBe(200);
      expect(thread.body).toMatchObject({ thread_id: threadId, metadata: { purpose: 'restart' }, status: 'idle' });
      expect(texts(thread.body.values)).toEqual(messagesBefore);

      const state = await call(second.agent, `/threads/${threadId}/state`);
      expect(state.status).toBe(200);
      expect(state.body.values).toEqual(before.body.values);
      expect(state.body.checkpoint).toEqual(before.body.checkpoint);
      expect(state.body.checkpoint.checkpoint_id).toEqual(expect.any(String));
      expect(state.body.parent_checkpoint).toEqual(before.body.parent_checkpoint);

      const runs = await call(second.agent, `/threads/${threadId}/runs`);
      expect(runs.status).toBe(200);
      expect(runs.body).toHaveLength(1);
      expect(runs.body[0]).toMatchObject({ thread_id: threadId, status: 'success' });

      const found = await call(second.agent, '/threads/search', { metadata: { purpose: 'restart' } });
      expect(found.body.map((t: { thread_id: string }) => t.thread_id)).toEqual([threadId]);
      // The default assistants are found again, not made twice.
      const assistantsAfter = (await call(second.agent, '/assistants/search', {})).body as { assistant_id: string }[];
      expect(assistantsAfter.map((a) => a.assistant_id).sort()).toEqual(
        assistantsBefore.map((a) => a.assistant_id).sort(),
      );

      // The long-term store kept its items.
      const item = await call(second.agent, '/store/items?namespace=memories.acme&key=k');
      expect(item.body).toMatchObject({ namespace: ['memories', 'acme'], key: 'k', value: { kept: true } });

      // The graph resumes from the stored checkpoint: no second greeting, the old messages stay first.
      const again = await call(second.agent, `/threads/${threadId}/runs/wait`, {
        assistant_id: 'agent',
        input: userInput('still there?'),
      });
      expect(again.status).toBe(200);
      const after = texts((await call(second.agent, `/threads/${threadId}/state`)).body.values);
      expect(after.slice(0, messagesBefore.length)).toEqual(messagesBefore);
      expect(after[messagesBefore.length]).toBe('still there?');
      expect(after.filter((m) => m === 'Hello, acme!')).toHaveLength(1);
    } finally {
      await second.agent.close();
    }
  });
});
