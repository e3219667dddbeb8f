import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from './fixtures/app/graphs.ts';
import { collect, eventually, newKey, sdk, startStack, userInput, type Stack } from './helpers.ts';

/**
 * The acceptance bar: the public JS client (@langchain/langgraph-sdk,
 * unmodified) against the Agent Server through the edge, authenticated by
 * API key. Every test has its own key, so the edge's per-key limits never meet.
 */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.close());

const client = () => sdk(stack.url, newKey());
type Chunk = { event: string; data: any; id?: string };
const events = (chunks: Chunk[]) => chunks.map((c) => c.event);

describe('assistants through the edge', () => {
  it('searches by metadata with limit and offset', async () => {
    const { client: c } = client();
    const tag = randomUUID();
    const made = [];
    for (const n of [1, 2, 3])
      made.push(await c.assistants.create({ graphId: 'agent', metadata: { tag, n }, name: `a${n}` }));
    const page1 = await c.assistants.search({ metadata: { tag }, limit: 2, offset: 0, includePagination: true });
    expect(page1.assistants).toHaveLength(2);
    expect(page1.next).toBe('2');
    const page2 = await c.assistants.search({ metadata: { tag }, limit: 2, offset: 2 });
    expect(page2).toHaveLength(1);
    expect([...page1.assistants, ...page2].map((a) => a.assistant_id).sort()).toEqual(
      made.map((a) => a.assistant_id).sort(),
    );
    expect(await c.assistants.search({ metadata: { tag, n: 2 } })).toEqual([made[1]]);
    const system = await c.assistants.search({ metadata: { created_by: 'system' }, graphId: 'agent' });
    expect(system).toHaveLength(1);
    expect(await c.assistants.get(system[0]!.assistant_id)).toEqual(system[0]);
    expect(await c.assistants.get('agent')).toEqual(system[0]);
  });

  it('answers the edge rate-limit headers on Agent Server responses', async () => {
    const { client: c, seen } = client();
    await c.assistants.search({ limit: 1 });
    expect(seen[0]?.status).toBe(200);
    expect(seen[0]?.headers.get('ratelimit-policy')).toMatch(/"default\.api-key";q=1000;w=10/);
    expect(seen[0]?.headers.get('ratelimit')).toMatch(/"default\.api-key";r=999;t=\d+/);
    expect(seen[0]?.headers.get('x-pagination-total')).toMatch(/^\d+$/);
  });
});

describe('threads through the edge', () => {
  it('creates, reads and searches threads', async () => {
    const { client: c } = client();
    const tag = randomUUID();
    const thread = await c.threads.create({ metadata: { tag } });
    expect(thread).toMatchObject({ status: 'idle', metadata: { tag }, values: null });
    expect(await c.threads.get(thread.thread_id)).toEqual(thread);
    const other = await c.threads.create({ metadata: { tag, second: true } });
    const found = await c.threads.search({ metadata: { tag } });
    expect(found.map((t) => t.thread_id).sort()).toEqual([thread.thread_id, other.thread_id].sort());
    expect((await c.threads.search({ metadata: { tag }, limit: 1 })).length).toBe(1);
    expect((await c.threads.search({ ids: [other.thread_id] })).map((t) => t.thread_id)).toEqual([other.thread_id]);
  });
});

describe('runs through the edge', () => {
  it('streams a threadless run in updates mode, greeting the key owner', async () => {
    const { client: c } = client();
    let created: { run_id: string } | undefined;
    const chunks = (await collect(
      c.runs.stream(null, 'agent', {
        input: userInput('hi there'),
        streamMode: 'updates',
        onRunCreated: (m) => (created = m),
      }),
    )) as Chunk[];
    expect(events(chunks)).toEqual(['metadata', 'updates', 'updates']);
    expect(chunks[0]!.data.run_id).toBe(created?.run_id);
    expect(chunks[1]!.data.greet.messages[0]).toMatchObject({ type: 'ai', content: 'Hello, acme!' });
    expect(chunks[2]!.data.model.messages[0].content).toBe(
      'You said "hi there" (2 words). I am a local model: no network, no keys, and the same answer every time.',
    );
  });

  it('streams a threadless run in messages mode token by token', async () => {
    const { client: c } = client();
    const chunks = (await collect(
      c.runs.stream(null, 'agent', { input: userInput('tell me'), streamMode: 'messages' }),
    )) as Chunk[];
    const partial = chunks.filter((ch) => ch.event === 'messages/partial').map((ch) => ch.data[0].content as string);
    expect(partial.length).toBeGreaterThan(10);
    for (let i = 1; i < partial.length; i++) expect(partial[i]!.startsWith(partial[i - 1]!)).toBe(true);
    const complete = chunks.filter((ch) => ch.event === 'messages/complete').map((ch) => ch.data[0].content);
    // Every message of each state, once, after that state (the input too), as the official server sends them.
    expect(complete).toEqual(['tell me', 'Hello, acme!', partial.at(-1)]);
    expect(complete[2]).toMatch(/^You said "tell me"/);
    const metadata = chunks
      .filter((ch) => ch.event === 'messages/metadata')
      .map((ch) => Object.values(ch.data)[0] as { metadata: { langgraph_node: string } });
    // Only a message a chat model streams starts with its metadata (greet returns its message whole).
    expect(metadata.map((m) => m.metadata.langgraph_node)).toEqual(['model']);
    expect(events(chunks)[0]).toBe('metadata');
  });

  it('streams messages-tuple and values, and several modes at once with each frame naming its mode', async () => {
    const { client: c } = client();
    const tuple = (await collect(
      c.runs.stream(null, 'agent', { input: userInput('a b c'), streamMode: 'messages-tuple' }),
    )) as Chunk[];
    const model = tuple.filter((ch) => ch.event === 'messages' && ch.data[1].langgraph_node === 'model');
    expect(model.length).toBeGreaterThan(10);
    expect(model.map((ch) => ch.data[0].content).join('')).toMatch(/^You said "a b c" \(3 words\)/);

    const values = (await collect(
      c.runs.stream(null, 'agent', { input: userInput('v'), streamMode: 'values' }),
    )) as Chunk[];
    expect(values.at(-1)!.data.messages.map((m: any) => m.type)).toEqual(['human', 'ai', 'ai']);

    const several = (await collect(
      c.runs.stream(null, 'agent', { input: userInput('all'), streamMode: ['values', 'updates', 'messages-tuple'] }),
    )) as Chunk[];
    expect(new Set(events(several))).toEqual(new Set(['metadata', 'values', 'updates', 'messages']));
    expect(several.filter((ch) => ch.event === 'updates').map((ch) => Object.keys(ch.data)[0])).toEqual([
      'greet',
      'model',
    ]);
  });

  it('streams values for an empty list of modes (what React useStream sends when nothing reads the stream)', async () => {
    const { client: c } = client();
    const chunks = (await collect(c.runs.stream(null, 'agent', { input: userInput('e'), streamMode: [] }))) as Chunk[];
    expect(new Set(events(chunks))).toEqual(new Set(['metadata', 'values']));
    expect(chunks.at(-1)!.data.messages.map((m: any) => m.type)).toEqual(['human', 'ai', 'ai']);
  });

  it('runs on a thread, keeps its state across runs, and waits for results', async () => {
    const { client: c } = client();
    const thread = await c.threads.create({ metadata: { purpose: 'chat' } });
    const first = (await collect(
      c.runs.stream(thread.thread_id, 'agent', { input: userInput('first'), streamMode: 'values' }),
    )) as Chunk[];
    expect(first.at(-1)!.data.messages).toHaveLength(3);
    const state = await c.threads.getState<{ messages: { type: string; content: string }[] }>(thread.thread_id);
    expect(state.values.messages.map((m) => m.content)).toEqual([
      'first',
      'Hello, acme!',
      expect.stringMatching(/^You said "first"/),
    ]);
    expect(state.next).toEqual([]);
    expect(state.checkpoint).toMatchObject({ thread_id: thread.thread_id, checkpoint_id: expect.any(String) });

    const waited = (await c.runs.wait(thread.thread_id, 'agent', { input: userInput('second') })) as {
      messages: { content: string }[];
    };
    expect(waited.messages.map((m) => m.content)).toEqual([
      'first',
      'Hello, acme!',
      expect.any(String),
      'second',
      expect.stringMatching(/^You said "second"/),
    ]);
    const after = await c.threads.get(thread.thread_id);
    expect(after).toMatchObject({ status: 'idle', metadata: { purpose: 'chat', graph_id: 'agent' } });
    expect((after.values as { messages: unknown[] }).messages).toHaveLength(5);
    expect(
      (await c.threads.search({ metadata: { purpose: 'chat' }, status: 'idle' })).map((t) => t.thread_id),
    ).toContain(thread.thread_id);

    const threadless = (await c.runs.wait(null, 'agent', { input: userInput('once') })) as {
      messages: { content: string }[];
    };
    expect(threadless.messages.at(-1)!.content).toMatch(/^You said "once"/);
  });
});

describe('errors as the client expects them', () => {
  it('404 for unknown ids', async () => {
    const { client: c } = client();
    await expect(c.threads.get(randomUUID())).rejects.toMatchObject({ status: 404 });
    await expect(c.assistants.get(randomUUID())).rejects.toMatchObject({ status: 404 });
    await expect(collect(c.runs.stream(randomUUID(), 'agent', { input: userInput('x') }))).rejects.toMatchObject({
      status: 404,
    });
    await expect(c.runs.wait(null, 'not-a-graph', { input: userInput('x') })).rejects.toMatchObject({ status: 404 });
  });

  it('409 for a run on a busy thread, 200 with a strategy that allows it', async () => {
    const { client: c } = client();
    const thread = await c.threads.create();
    let runId = '';
    const busy = collect(
      c.runs.stream(thread.thread_id, 'slow', {
        input: userInput('x'),
        config: { configurable: { wait_ms: 30_000 } },
        onRunCreated: (m) => (runId = m.run_id),
      }),
    );
    await eventually(async () => (runId !== '' && registry.started.has(runId) ? true : undefined));
    const err = await c.runs.wait(thread.thread_id, 'agent', { input: userInput('y') }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 409 });
    expect(String((err as Error).message)).toMatch(/HTTP 409: .*already running/);
    const ok = (await c.runs.wait(thread.thread_id, 'agent', {
      input: userInput('y'),
      multitaskStrategy: 'interrupt',
    })) as { messages: { content: string }[] };
    expect(ok.messages.at(-1)!.content).toMatch(/^You said "y"/);
    expect(events((await busy) as Chunk[]).at(-1)).toBe('error');
  });

  it('422 for an invalid body, with a readable reason and no stack', async () => {
    const { client: c } = client();
    const bad = await collect(
      c.runs.stream(null, 'agent', { input: userInput('x'), streamMode: 'bogus' as never }),
    ).catch((e: unknown) => e);
    expect(bad).toMatchObject({ status: 422 });
    expect((bad as Error).message).toMatch(/stream_mode/);
    const badId = await c.threads.create({ threadId: 'not-a-uuid' }).catch((e: unknown) => e);
    expect(badId).toMatchObject({ status: 422 });
    expect((badId as Error).message).toMatch(/thread_id/);
    expect((badId as Error).message).not.toMatch(/\n\s+at /);
  });

  it('401 without a valid key, before any graph runs', async () => {
    const { client: c } = sdk(stack.url, newKey('other'));
    await expect(c.assistants.search()).rejects.toMatchObject({ status: 401 });
  });
});
