import { beforeAll, expect, it } from 'vitest';
import { registry } from '../fixtures/app/graphs.ts';
import { collect, newKey, sdk, userInput, type Stack } from '../helpers.ts';
import { type Chunk, type LifecycleContext, waitFor } from './context.ts';

/** Following a run (joinStream): by stream mode, cancelling on leave, resuming after Last-Event-ID. */
export function runJoinStreamCases(shared: LifecycleContext): void {
  const { client, slowRun } = shared;
  let stack: Stack;
  beforeAll(() => {
    stack = shared.stack;
  });
  it('joinStream follows a running run, filtered by stream mode, until it ends', async () => {
    const c = client();
    const thread = await c.threads.create();
    let runId = '';
    const original = collect(
      c.runs.stream(thread.thread_id, 'agent', {
        input: userInput('join me please'),
        streamMode: ['values', 'messages-tuple'],
        config: { configurable: { token_delay_ms: 60 } },
        onRunCreated: (m) => (runId = m.run_id),
      }),
    ) as Promise<Chunk[]>;
    await waitFor(() => runId !== '');
    const [valuesOnly, everything] = (await Promise.all([
      collect(c.runs.joinStream(thread.thread_id, runId, { streamMode: 'values' })),
      collect(c.runs.joinStream(thread.thread_id, runId)),
    ])) as [Chunk[], Chunk[]];
    const own = await original;
    expect(new Set(valuesOnly.map((ch) => ch.event))).toEqual(new Set(['values']));
    expect(valuesOnly.at(-1)).toEqual(own.at(-1));
    expect(valuesOnly.at(-1)!.data.messages.at(-1).content).toMatch(/^You said "join me please"/);
    expect(everything.some((ch) => ch.event === 'messages')).toBe(true);
    expect(everything.at(-1)).toEqual(own.at(-1));
    // A finished run: the stream ends at once.
    expect(await collect(c.runs.joinStream(thread.thread_id, runId))).toEqual([]);
  });

  it('joinStream with cancelOnDisconnect cancels the run when the joiner leaves', async () => {
    const { client: c, seen } = sdk(stack.url, newKey());
    const thread = await c.threads.create();
    const { runId, chunks } = await slowRun(c, thread.thread_id);
    await waitFor(() => registry.started.has(runId));
    const ac = new AbortController();
    const joined = collect(
      c.runs.joinStream(thread.thread_id, runId, { cancelOnDisconnect: true, signal: ac.signal }),
    ).catch(() => 'aborted');
    await waitFor(() => seen.some((s) => s.url.includes(`/runs/${runId}/stream`) && s.status === 200));
    ac.abort();
    await joined;
    await waitFor(() => registry.cancelled.has(runId));
    // The run's own stream learns why it ended.
    expect((await chunks).at(-1)).toMatchObject({
      event: 'error',
      data: { error: 'CancelledError', message: expect.stringMatching(/disconnected/) },
    });
    expect((await c.runs.get(thread.thread_id, runId)).status).toBe('interrupted');
  });

  it('joinStream resumes after Last-Event-ID: every frame after it, none twice, while running and after the end', async () => {
    const c = client();
    const thread = await c.threads.create();
    let runId = '';
    const own: Chunk[] = [];
    const original = (async () => {
      const stream = c.runs.stream(thread.thread_id, 'agent', {
        input: userInput('resume me please'),
        streamMode: ['values', 'messages-tuple'],
        config: { configurable: { token_delay_ms: 40 } },
        onRunCreated: (m) => (runId = m.run_id),
      });
      for await (const chunk of stream as AsyncIterable<Chunk>) own.push(chunk);
    })();
    await waitFor(() => own.length >= 4);
    const resumed = (await collect(c.runs.joinStream(thread.thread_id, runId, { lastEventId: own[2]!.id }))) as Chunk[];
    await original;
    expect(own.map((ch) => ch.id)).toEqual(own.map((_, i) => String(i)));
    expect(own.length).toBeGreaterThan(10);
    expect(resumed).toEqual(own.slice(3));
    // The run has ended: its frames are still held, and a client that saw them all gets nothing more.
    expect(await collect(c.runs.joinStream(thread.thread_id, runId, { lastEventId: String(own.length - 3) }))).toEqual(
      own.slice(-2),
    );
    expect(await collect(c.runs.joinStream(thread.thread_id, runId, { lastEventId: String(own.length - 1) }))).toEqual(
      [],
    );
  });

  it('a stream_resumable run goes on without its client; a join without Last-Event-ID replays it from the first frame', async () => {
    const c = client();
    const thread = await c.threads.create();
    const ac = new AbortController();
    let runId = '';
    const seen: Chunk[] = [];
    const stream = c.runs.stream(thread.thread_id, 'agent', {
      input: userInput('carry on without me'),
      streamMode: 'messages-tuple',
      streamResumable: true,
      config: { configurable: { token_delay_ms: 30 } },
      signal: ac.signal,
      onRunCreated: (m) => (runId = m.run_id),
    });
    for await (const chunk of stream as AsyncIterable<Chunk>) {
      seen.push(chunk);
      if (seen.length === 3) break;
    }
    ac.abort();
    const replay = (await collect(c.runs.joinStream(thread.thread_id, runId))) as Chunk[];
    expect(replay.slice(0, 3)).toEqual(seen);
    expect(replay.map((ch) => ch.id)).toEqual(replay.map((_, i) => String(i)));
    expect(replay.some((ch) => ch.event === 'error')).toBe(false);
    expect((await c.runs.get(thread.thread_id, runId)).status).toBe('success');
    const said = replay
      .filter((ch) => ch.event === 'messages' && ch.data[1].langgraph_node === 'model')
      .map((ch) => ch.data[0].content)
      .join('');
    expect(said).toMatch(/You said "carry on without me"/);
  });

  it('answers 422 naming the header for a Last-Event-ID that is not a frame number', async () => {
    const c = client();
    const thread = await c.threads.create();
    await c.runs.wait(thread.thread_id, 'agent', { input: userInput('hi') });
    const [run] = await c.runs.list(thread.thread_id);
    const err = await collect(c.runs.joinStream(thread.thread_id, run!.run_id, { lastEventId: 'abc' })).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ status: 422 });
    expect((err as Error).message).toContain('last-event-id');
  });
}
