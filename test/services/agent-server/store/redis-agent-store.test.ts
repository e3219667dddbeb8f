import { randomUUID } from 'node:crypto';
import { MemorySaver, type BaseCheckpointSaver } from '@langchain/langgraph';
import { emptyCheckpoint, uuid6, type Checkpoint, type CheckpointTuple } from '@langchain/langgraph-checkpoint';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisCheckpointer } from '../../../../src/services/agent-server/store/redis-checkpointer.ts';
import { RedisAgentStore } from '../../../../src/services/agent-server/store/redis-agent-store.ts';
import { storeContract } from './agent-store-contract.ts';
import { sharedRedis, uniquePrefix } from '../../../helpers/shared-redis.ts';

/**
 * The store contract and the checkpointer against the shared Redis,
 * every key under a prefix of this run, removed afterwards (never a flush).
 */
const prefix = uniquePrefix('test-agent');
const redis = sharedRedis({ maxRetriesPerRequest: 2 });

afterAll(async () => {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    if (keys.length > 0) await redis.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
  await redis.quit();
});

let made = 0;
// A fresh prefix per store: the contract expects each store to start empty.
storeContract('redis', async () => new RedisAgentStore(redis, { prefix: `${prefix}:store${++made}` }));

describe('redis store', () => {
  it('keeps its records across instances, and close() leaves a shared client open', async () => {
    const p = `${prefix}:again`;
    const a = new RedisAgentStore(redis, { prefix: p });
    const now = new Date().toISOString();
    const thread = {
      thread_id: randomUUID(),
      created_at: now,
      updated_at: now,
      metadata: {},
      status: 'idle' as const,
      values: { n: 1 },
      config: {},
      interrupts: {},
    };
    await a.putThread(thread);
    await a.close();
    expect(redis.status).toBe('ready');
    const b = new RedisAgentStore(redis, { prefix: p });
    expect(await b.getThread(thread.thread_id)).toEqual(thread);
    expect(await b.listThreads()).toEqual([thread]);
    expect(await new RedisAgentStore(redis, { prefix: `${prefix}:elsewhere` }).listThreads()).toEqual([]);
  });
});

/** The same steps against MemorySaver and RedisCheckpointer must give the same answers. */
describe('redis checkpointer (compared with MemorySaver)', () => {
  const checkpoint = (values: Record<string, unknown>): Checkpoint => ({
    ...emptyCheckpoint(),
    id: uuid6(-1),
    channel_values: values,
    channel_versions: { messages: 1 },
  });

  async function scenario(saver: BaseCheckpointSaver, thread: string) {
    const cfg = { configurable: { thread_id: thread, checkpoint_ns: '' } };
    const c1 = checkpoint({ messages: ['a'], bytes: new Uint8Array([1, 2, 3]) });
    const c1cfg = await saver.put(cfg, c1, { source: 'input', step: -1, parents: {} }, {});
    const c2 = checkpoint({ messages: ['a', 'b'] });
    const c2cfg = await saver.put(c1cfg, c2, { source: 'loop', step: 0, parents: {} }, {});
    await saver.putWrites(
      c2cfg,
      [
        ['messages', 'x'],
        ['other', { deep: [1] }],
      ],
      'task-b',
      'path-2',
    );
    await saver.putWrites(c2cfg, [['messages', 'first']], 'task-a', 'path-1');
    await saver.putWrites(c2cfg, [['messages', 'replaced?']], 'task-a', 'path-1');
    await saver.putWrites(c2cfg, [['__error__', 'e1']], 'task-c');
    await saver.putWrites(c2cfg, [['__error__', 'e2']], 'task-c');
    const c3 = checkpoint({ sub: true });
    await saver.put(
      { configurable: { thread_id: thread, checkpoint_ns: 'sub:1' } },
      c3,
      { source: 'loop', step: 1, parents: {} },
      {},
    );
    const strip = (t: CheckpointTuple | undefined) => t && { ...t, checkpoint: { ...t.checkpoint, ts: 'ts' } };
    const all = [];
    for await (const t of saver.list({ configurable: { thread_id: thread } })) all.push(strip(t));
    const limited = [];
    for await (const t of saver.list({ configurable: { thread_id: thread, checkpoint_ns: '' } }, { limit: 1 }))
      limited.push(strip(t));
    const before = [];
    for await (const t of saver.list({ configurable: { thread_id: thread, checkpoint_ns: '' } }, { before: c2cfg }))
      before.push(strip(t));
    const filtered = [];
    for await (const t of saver.list({ configurable: { thread_id: thread } }, { filter: { source: 'input' } }))
      filtered.push(strip(t));
    const latest = strip(await saver.getTuple(cfg));
    const first = strip(await saver.getTuple(c1cfg));
    await saver.deleteThread(thread);
    const gone = await saver.getTuple(cfg);
    return { ids: [c1.id, c2.id, c3.id], all, limited, before, filtered, latest, first, gone };
  }

  it('answers getTuple, list (namespace, limit, before, filter), putWrites and deleteThread like MemorySaver', async () => {
    const memory = await scenario(new MemorySaver(), 't-mem');
    const redisSaver = new RedisCheckpointer(redis, { prefix: `${prefix}:cp` });
    const fromRedis = await scenario(redisSaver, 't-redis');
    const normalise = (x: unknown, from: string, to: string, ids: string[], into: string[]) =>
      JSON.parse(
        ids.reduce(
          (s, id, i) => s.replaceAll(id, into[i]!),
          JSON.stringify(x, (_k, v) => (v instanceof Uint8Array ? [...v] : v)).replaceAll(from, to),
        ),
      );
    const a = normalise(memory, 't-mem', 'T', memory.ids, ['C1', 'C2', 'C3']);
    const b = normalise(fromRedis, 't-redis', 'T', fromRedis.ids, ['C1', 'C2', 'C3']);
    expect(b).toEqual(a);
    // The interesting parts, spelled out.
    expect(b.latest.checkpoint.channel_values).toEqual({ messages: ['a', 'b'] });
    expect(b.latest.pendingWrites).toEqual([
      ['task-c', '__error__', 'e2'],
      ['task-a', 'messages', 'first'],
      ['task-b', 'messages', 'x'],
      ['task-b', 'other', { deep: [1] }],
    ]);
    expect(b.latest.parentConfig).toEqual({ configurable: { thread_id: 'T', checkpoint_ns: '', checkpoint_id: 'C1' } });
    expect(b.first.checkpoint.channel_values.bytes).toEqual([1, 2, 3]);
    expect(b.all).toHaveLength(3);
    expect(b.limited.map((t: CheckpointTuple) => t.config.configurable?.checkpoint_id)).toEqual(['C2']);
    expect(b.before.map((t: CheckpointTuple) => t.config.configurable?.checkpoint_id)).toEqual(['C1']);
    expect(b.filtered).toHaveLength(1);
    expect(b.gone).toBeUndefined();
    const [, left] = await redis.scan('0', 'MATCH', `${prefix}:cp:cp:*`, 'COUNT', 1000);
    expect(left).toEqual([]);
  });
});
