import { fileURLToPath } from 'node:url';
import { MemorySaver, type BaseCheckpointSaver } from '@langchain/langgraph';
import type { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisAgentStore } from '../../../../src/services/agent-server/store/redis-agent-store.ts';
import { RedisCheckpointer } from '../../../../src/services/agent-server/store/redis-checkpointer.ts';
import type { ThreadStorage } from '../../../../src/services/agent-server/store/storage-tally.ts';
import { deleteByPrefix } from '../../../helpers/redis-keys.ts';
import { sharedRedis, uniquePrefix } from '../../../helpers/shared-redis.ts';
import { newKey, sdk, startAgentServer, userInput, type RunningAgentServer } from '../helpers.ts';

/**
 * `GET /threads/{id}/storage` on both of the server's checkpointers: the numbers are what a direct read of the stored
 * rows gives (subgraph namespaces included), grow with each run, and count a channel's value once per checkpoint
 * holding it.
 */
const STREAM_APP = fileURLToPath(new URL('../fixtures/stream-app/langgraph.json', import.meta.url));

/** What is stored for a thread, read straight from the checkpointer's storage. */
interface DirectRead {
  total: number;
  writes: number;
  namespaces: Set<string>;
}

const redis = sharedRedis({ maxRetriesPerRequest: 2 });
const prefix = uniquePrefix('test:thread-storage');
afterAll(async () => {
  await deleteByPrefix(redis, prefix);
  await redis.quit();
});

const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');

function memoryRead(saver: MemorySaver, threadId: string): DirectRead {
  const read: DirectRead = { total: 0, writes: 0, namespaces: new Set() };
  for (const [ns, checkpoints] of Object.entries(saver.storage[threadId] ?? {})) {
    read.namespaces.add(ns);
    for (const [cp, md, parent] of Object.values(checkpoints))
      read.total += cp.byteLength + md.byteLength + utf8(parent ?? '');
  }
  for (const [key, writes] of Object.entries(saver.writes)) {
    if ((JSON.parse(key) as string[])[0] !== threadId) continue;
    for (const [task, channel, value, path] of Object.values(writes)) {
      read.total += utf8(task) + utf8(channel) + value.byteLength + utf8(path ?? '');
      read.writes += 1;
    }
  }
  return read;
}

/** HSTRLEN of every field of the thread's `ckpt:` and `writes:` hashes, found by SCAN (the test's own client). */
async function redisRead(client: Redis, threadId: string): Promise<DirectRead> {
  const read: DirectRead = { total: 0, writes: 0, namespaces: new Set() };
  for (const kind of ['ckpt', 'writes'] as const) {
    for await (const keys of client.scanStream({ match: `${prefix}:cp:${kind}:*`, count: 1000 }) as AsyncIterable<
      string[]
    >) {
      for (const key of keys) {
        const [thread, ns] = JSON.parse(/\[.*?\]/.exec(key)![0]) as [string, string];
        if (thread !== threadId) continue;
        if (kind === 'ckpt') read.namespaces.add(ns);
        for (const field of await client.hkeys(key)) {
          read.total += await client.hstrlen(key, field);
          if (kind === 'writes') read.writes += 1;
        }
      }
    }
  }
  return read;
}

const stores: [string, () => { checkpointer: BaseCheckpointSaver; read(threadId: string): Promise<DirectRead> }][] = [
  [
    'memory',
    () => {
      const saver = new MemorySaver();
      return { checkpointer: saver, read: async (id) => memoryRead(saver, id) };
    },
  ],
  [
    'redis',
    () => ({
      checkpointer: new RedisCheckpointer(redis, { prefix }),
      store: new RedisAgentStore(redis, { prefix }),
      read: (id) => redisRead(redis, id),
    }),
  ],
];

describe.each(stores)('thread storage in the %s checkpointer', (_name, make) => {
  const made = make();
  const long = 'x'.repeat(2000);
  let agent: RunningAgentServer;
  const key = newKey();
  const storage = async (threadId: string): Promise<ThreadStorage> => {
    const res = await fetch(`${agent.url}/threads/${threadId}/storage`, { headers: { 'x-api-key': key } });
    expect(res.status).toBe(200);
    return (await res.json()) as ThreadStorage;
  };
  afterAll(() => agent?.close());

  it('matches what is stored, subgraphs included, and grows with each run', async () => {
    agent = await startAgentServer({ configPath: STREAM_APP, ...made });
    const { client } = sdk(agent.url, key);
    const thread = await client.threads.create();
    expect(await storage(thread.thread_id)).toEqual({
      thread_id: thread.thread_id,
      total_bytes: 0,
      checkpoints: { rows: 0, bytes: 0 },
      channel_values: { rows: 0, bytes: 0, by_channel: {} },
      pending_writes: { rows: 0, bytes: 0 },
    });

    // `nested` stops at an interrupt inside its `child` subgraph: checkpoints in a `child:<task>` namespace too.
    await client.runs.wait(thread.thread_id, 'nested', { input: userInput(long) });
    const first = await storage(thread.thread_id);
    const direct = await made.read(thread.thread_id);
    expect([...direct.namespaces].some((ns) => ns.startsWith('child:'))).toBe(true);
    expect(first.total_bytes).toBe(direct.total);
    expect(first.total_bytes).toBe(first.checkpoints.bytes + first.channel_values.bytes + first.pending_writes.bytes);
    expect(first.pending_writes.rows).toBe(direct.writes);

    // One `messages` row per checkpoint (of every namespace) holding the channel, the input's 2000 characters in each
    // that holds it.
    const tuples = [];
    for await (const tuple of made.checkpointer.list({ configurable: { thread_id: thread.thread_id } }))
      tuples.push(tuple);
    expect(first.checkpoints.rows).toBe(tuples.length);
    const holding = tuples.filter((t) => 'messages' in t.checkpoint.channel_values).length;
    expect(first.channel_values.by_channel.messages!.rows).toBe(holding);
    const holdingInput = tuples.filter((t) => JSON.stringify(t.checkpoint.channel_values.messages).includes(long));
    expect(holdingInput.length).toBeGreaterThan(1);
    expect(first.channel_values.by_channel.messages!.bytes).toBeGreaterThan(holdingInput.length * 2000);
    expect(first.channel_values.rows).toBe(
      Object.values(first.channel_values.by_channel).reduce((n, s) => n + s.rows, 0),
    );

    await client.runs.wait(thread.thread_id, 'nested', { command: { resume: 'yes' } });
    const second = await storage(thread.thread_id);
    expect(second.total_bytes).toBe((await made.read(thread.thread_id)).total);
    expect(second.checkpoints.rows).toBeGreaterThan(first.checkpoints.rows);
    expect(second.channel_values.by_channel.messages!.bytes).toBeGreaterThan(
      first.channel_values.by_channel.messages!.bytes,
    );
    expect(second.pending_writes.rows).toBeGreaterThan(first.pending_writes.rows);
  });

  it('answers 404 for an unknown thread and 422 for an id that is not a UUID', async () => {
    const unknown = await fetch(`${agent.url}/threads/${crypto.randomUUID()}/storage`, {
      headers: { 'x-api-key': key },
    });
    expect(unknown.status).toBe(404);
    const bad = await fetch(`${agent.url}/threads/not-a-uuid/storage`, { headers: { 'x-api-key': key } });
    expect(bad.status).toBe(422);
    expect(JSON.stringify(await bad.json())).toContain('thread_id must be a UUID');
  });
});
