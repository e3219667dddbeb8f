import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { registry } from '../fixtures/app/graphs.ts';
import { collect, eventually, userInput } from '../helpers.ts';
import { type Chunk, type LifecycleContext, waitFor } from './context.ts';

/** Cancelling runs, waiting for them (join), and starting them in a batch. */
export function runCancelJoinCases(shared: LifecycleContext): void {
  const { client, slowRun } = shared;
  it('cancel stops a running run (202): error event, status interrupted; a finished run stays as it was', async () => {
    const c = client();
    const thread = await c.threads.create();
    const { runId, chunks } = await slowRun(c, thread.thread_id);
    await waitFor(() => registry.started.has(runId));
    expect(await c.runs.cancel(thread.thread_id, runId)).toBeUndefined();
    expect((await chunks).at(-1)).toMatchObject({ event: 'error', data: { error: 'CancelledError' } });
    expect(registry.cancelled.has(runId)).toBe(true);
    const run = await eventually(async () => {
      const r = await c.runs.get(thread.thread_id, runId);
      return r.status === 'interrupted' ? r : undefined;
    });
    expect(run.run_id).toBe(runId);
    await c.runs.cancel(thread.thread_id, runId, true);
    expect((await c.runs.get(thread.thread_id, runId)).status).toBe('interrupted');
    expect((await c.threads.get(thread.thread_id)).status).toBe('idle');
  });

  it('cancel with wait answers once the run has stopped; a queued run is cancelled before it starts', async () => {
    const c = client();
    const thread = await c.threads.create();
    const first = await slowRun(c, thread.thread_id);
    await waitFor(() => registry.started.has(first.runId));
    const queued = await slowRun(c, thread.thread_id, { strategy: 'enqueue' });
    await c.runs.cancel(thread.thread_id, queued.runId, true);
    expect((await c.runs.get(thread.thread_id, queued.runId)).status).toBe('interrupted');
    expect(registry.started.has(queued.runId)).toBe(false);
    expect((await c.runs.get(thread.thread_id, first.runId)).status).toBe('running');
    await c.runs.cancel(thread.thread_id, first.runId, true);
    expect((await c.runs.get(thread.thread_id, first.runId)).status).toBe('interrupted');
    await Promise.all([first.chunks, queued.chunks]);
  });

  it('join waits for the run and answers the final values; a finished run answers at once', async () => {
    const c = client();
    const thread = await c.threads.create();
    const { runId, chunks } = await slowRun(c, thread.thread_id, { waitMs: 300 });
    const joined = (await c.runs.join(thread.thread_id, runId)) as { messages: { content: string }[] };
    expect(joined.messages.map((m) => m.content)).toEqual(['x', 'waited']);
    expect((await c.runs.get(thread.thread_id, runId)).status).toBe('success');
    await chunks;
    expect(await c.runs.join(thread.thread_id, runId)).toEqual(joined);
  });

  it.each([
    ['on a thread', true],
    ['threadless', false],
  ])(
    'create starts a run in the background (%s): join replays it from its first event, in every mode unless it named some',
    async (_, threaded) => {
      const c = client();
      const threadId = threaded ? (await c.threads.create()).thread_id : null;
      let created: { run_id: string; thread_id?: string } | undefined;
      const input = userInput('in the background');
      const run = await c.runs.create(threadId, 'agent', {
        input,
        config: { configurable: { token_delay_ms: 20 } },
        onRunCreated: (m) => (created = m),
      });
      expect(run).toMatchObject({
        run_id: expect.any(String),
        status: expect.stringMatching(/^(pending|running)$/),
        metadata: { assistant_id: expect.any(String) },
      });
      expect(created?.run_id).toBe(run.run_id);
      const everything = (await collect(c.runs.joinStream(threadId, run.run_id))) as Chunk[];
      expect(everything[0]).toMatchObject({ event: 'metadata', data: { run_id: run.run_id }, id: '0' });
      expect(new Set(everything.map((ch) => ch.event))).toEqual(
        new Set([
          'metadata',
          'values',
          'updates',
          'messages',
          'messages/metadata',
          'messages/partial',
          'messages/complete',
        ]),
      );
      const updates = (await collect(c.runs.joinStream(threadId, run.run_id, { streamMode: 'updates' }))) as Chunk[];
      expect(updates).toEqual(everything.filter((ch) => ch.event === 'metadata' || ch.event === 'updates'));
      expect(
        everything
          .filter((ch) => ch.event === 'values')
          .at(-1)!
          .data.messages.at(-1).content,
      ).toMatch(/^You said "in the background"/);
      if (threadId !== null) {
        expect((await c.runs.get(threadId, run.run_id)).status).toBe('success');
        const named = await c.runs.create(threadId, 'agent', { input, streamMode: 'updates' });
        const only = (await collect(c.runs.joinStream(threadId, named.run_id))) as Chunk[];
        expect(new Set(only.map((ch) => ch.event))).toEqual(new Set(['metadata', 'updates']));
      }
    },
  );

  it('createBatch starts threadless runs in the background; an unknown assistant fails the whole batch', async () => {
    const c = client();
    const runs = await c.runs.createBatch([
      { assistantId: 'agent', input: userInput('first of two') },
      { assistantId: 'uncompiled', input: userInput('second of two') },
    ]);
    expect(runs).toHaveLength(2);
    const last = async (runId: string) =>
      ((await collect(c.runs.joinStream(null, runId, { streamMode: 'values' }))) as Chunk[]).at(-1)!.data;
    expect((await last(runs[0]!.run_id)).messages.at(-1).content).toMatch(/^You said "first of two"/);
    expect((await last(runs[1]!.run_id)).messages.at(-1).content).toBe('uncompiled ok');
    await expect(
      c.runs.createBatch([
        { assistantId: 'agent', input: userInput('x') },
        { assistantId: randomUUID(), input: userInput('y') },
      ]),
    ).rejects.toMatchObject({ status: 404 });
  });

  it('create answers 422 naming webhook when it points at a loopback address (WEBHOOK_HOSTS_ALLOWED unset)', async () => {
    const c = client();
    const thread = await c.threads.create();
    const hooked = await c.runs
      .create(thread.thread_id, 'agent', { input: userInput('x'), webhook: 'http://127.0.0.1:9/hook' })
      .catch((e: unknown) => e);
    expect(hooked).toMatchObject({ status: 422, message: expect.stringContaining('webhook') });
    expect(await c.runs.list(thread.thread_id)).toEqual([]);
  });

  it('keeps a run with after_seconds pending until it is cancelled (a delayed start)', async () => {
    const c = client();
    const thread = await c.threads.create();
    const delayed = await c.runs.create(thread.thread_id, 'agent', { input: userInput('later'), afterSeconds: 60 });
    expect(delayed.status).toBe('pending');
    expect((await c.runs.list(thread.thread_id, { status: 'pending' })).map((r) => r.run_id)).toEqual([delayed.run_id]);
    await c.runs.cancel(thread.thread_id, delayed.run_id, true);
    expect((await c.runs.get(thread.thread_id, delayed.run_id)).status).toBe('interrupted');
    expect((await c.threads.getState(thread.thread_id)).values).toEqual({});
  });

  it('join of a failed run answers the state it reached', async () => {
    const c = client();
    const thread = await c.threads.create();
    await expect(c.runs.wait(thread.thread_id, 'failing', { input: userInput('x') })).rejects.toThrow(/the tool broke/);
    const [run] = await c.runs.list(thread.thread_id);
    expect(run!.status).toBe('error');
    const joined = (await c.runs.join(thread.thread_id, run!.run_id)) as { messages: { content: string }[] };
    expect(joined.messages.map((m) => m.content)).toEqual(['x', 'step one done']);
  });
}
