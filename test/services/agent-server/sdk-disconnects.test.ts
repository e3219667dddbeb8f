import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from './fixtures/app/graphs.ts';
import { collect, cuttingRelay, eventually, newKey, sdk, startStack, userInput, type Stack } from './helpers.ts';

/**
 * The public JS client against the Agent Server through the edge (as in
 * sdk.test.ts), when the client goes away: the run is cancelled and the
 * graph sees the abort.
 */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.close());

const client = () => sdk(stack.url, newKey());
type Chunk = { event: string; data: any; id?: string };

describe('client disconnects through the edge', () => {
  it('cancels the graph run when the client aborts its stream (on_disconnect: cancel)', async () => {
    const { client: c } = client();
    const thread = await c.threads.create();
    const ac = new AbortController();
    let runId = '';
    const tokens: string[] = [];
    // The full answer is ~20 tokens at 100 ms each; the client leaves after 3.
    const stream = c.runs.stream(thread.thread_id, 'agent', {
      input: userInput('please take your time with this long answer'),
      streamMode: 'messages-tuple',
      config: { configurable: { token_delay_ms: 100 } },
      // Asked for: the default is now continue, as on the official server.
      onDisconnect: 'cancel',
      signal: ac.signal,
      onRunCreated: (m) => (runId = m.run_id),
    });
    for await (const chunk of stream as AsyncIterable<Chunk>) {
      if (chunk.event === 'messages' && chunk.data[1].langgraph_node === 'model') tokens.push(chunk.data[0].content);
      if (tokens.length === 3) {
        ac.abort();
        break;
      }
    }
    const run = await eventually(async () => {
      const r = await c.runs.get(thread.thread_id, runId);
      return r.status === 'running' || r.status === 'pending' ? undefined : r;
    });
    expect(run.status).toBe('interrupted');
    const state = await c.threads.getState<{ messages: { content: string }[] }>(thread.thread_id);
    expect(state.values.messages.map((m) => m.content)).toEqual([
      'please take your time with this long answer',
      'Hello, acme!',
    ]);
    expect((await c.threads.get(thread.thread_id)).status).toBe('idle');
  });

  it('cancels a threadless run too: the graph sees the abort', async () => {
    const { client: c } = client();
    const ac = new AbortController();
    let runId = '';
    const stream = c.runs.stream(null, 'slow', {
      input: userInput('x'),
      streamMode: 'updates',
      onDisconnect: 'cancel',
      signal: ac.signal,
      onRunCreated: (m) => (runId = m.run_id),
    });
    const done = collect(stream).catch(() => 'aborted');
    await eventually(async () => (runId !== '' && registry.started.has(runId) ? true : undefined));
    ac.abort();
    await done;
    await eventually(async () => (registry.cancelled.has(runId) ? true : undefined));
    expect(registry.finished.has(runId)).toBe(false);
  });

  it.each([
    ['on a thread', true],
    ['threadless', false],
  ])(
    'resumes a broken run stream by itself (Location, Last-Event-ID), %s: no event lost, none twice',
    async (_, threaded) => {
      // A TCP relay in front of the edge that breaks the first connection whose stream has reached frame 5.
      const relay = await cuttingRelay(stack.url);
      try {
        const { client: c, seen } = sdk(relay.url, newKey());
        const threadId = threaded ? (await c.threads.create()).thread_id : null;
        let runId = '';
        const options = {
          input: userInput('a stream worth keeping whole'),
          streamMode: 'messages-tuple' as const,
          streamResumable: true,
          config: { configurable: { token_delay_ms: 40 } },
          onRunCreated: (m: { run_id: string }) => (runId = m.run_id),
        };
        const stream =
          threadId === null ? c.runs.stream(null, 'agent', options) : c.runs.stream(threadId, 'agent', options);
        const chunks = (await collect(stream)) as Chunk[];
        expect(relay.cut()).toBe(true);
        const joinPath = threaded ? `/threads/${threadId}/runs/${runId}/stream` : `/runs/${runId}/stream`;
        const resumedWith = seen.filter((s) => new URL(s.url).pathname === joinPath);
        expect(resumedWith.map((s) => s.status)).toEqual([200]);
        expect(chunks.map((ch) => ch.id)).toEqual(chunks.map((_, i) => String(i)));
        expect(chunks.length).toBeGreaterThan(10);
        // The same frames as the whole run, replayed from the start.
        expect(chunks).toEqual(await collect(c.runs.joinStream(threadId, runId, { lastEventId: '-1' })));
        if (threadId !== null) expect((await c.runs.get(threadId, runId)).status).toBe('success');
      } finally {
        relay.close();
      }
    },
  );
});
