import type { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, cuttingRelay, eventually, newKey, sdk, startStack, userInput, type Stack } from '../helpers.ts';

/**
 * The thread stream (`GET /threads/{thread_id}/stream`, the JS client's
 * `threads.joinStream`) with the unmodified public client, through the edge.
 */
type Chunk = { event: string; data: any; id?: string };
const waitFor = (check: () => boolean, ms?: number) => eventually(async () => (check() ? true : undefined), ms);
const bare = (chunks: Chunk[]) => chunks.map(({ event, data }) => ({ event, data }));
/**
 * Ids rise: a frame's id is its number in the thread's stream, where a reader of some modes skips the others' frames.
 */
const rising = (chunks: Chunk[]) => chunks.every((ch, i) => i === 0 || Number(ch.id) > Number(chunks[i - 1]!.id));

/** Follows an endless stream in the background until `stop()`. */
function watch(open: (signal: AbortSignal) => AsyncIterable<unknown>) {
  const ac = new AbortController();
  const chunks: Chunk[] = [];
  const ended = (async () => {
    try {
      for await (const chunk of open(ac.signal)) chunks.push(chunk as Chunk);
    } catch (err) {
      if (!ac.signal.aborted) throw err;
    }
  })();
  return {
    chunks,
    ended,
    async stop() {
      ac.abort();
      await ended;
    },
  };
}

describe('thread stream through the SDK', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.close());

  /** `n` followers of the thread are connected. */
  const connected = (seen: { url: string; status: number }[], threadId: string, n: number) =>
    waitFor(
      () =>
        seen.filter((s) => new URL(s.url).pathname === `/threads/${threadId}/stream` && s.status === 200).length >= n,
    );

  /** Two runs on the thread, one after the other: the first streams `values`, the second `updates` only. */
  async function twoRuns(c: Client, threadId: string) {
    const first = (await collect(
      c.runs.stream(threadId, 'agent', { input: userInput('one'), streamMode: 'values' }),
    )) as Chunk[];
    const second = (await collect(
      c.runs.stream(threadId, 'agent', { input: userInput('two'), streamMode: 'updates' }),
    )) as Chunk[];
    return { first, second, ids: [first[0]!.data.run_id as string, second[0]!.data.run_id as string] };
  }

  it('follows every run on the thread in turn; lifecycle and state_update carry only theirs', async () => {
    const { client: c, seen } = sdk(stack.url, newKey());
    const thread = await c.threads.create();
    const all = watch((signal) => c.threads.joinStream(thread.thread_id, { signal }));
    const lifecycle = watch((signal) => c.threads.joinStream(thread.thread_id, { streamMode: 'lifecycle', signal }));
    const state = watch((signal) => c.threads.joinStream(thread.thread_id, { streamMode: ['state_update'], signal }));
    await connected(seen, thread.thread_id, 3);

    const { first, second, ids } = await twoRuns(c, thread.thread_id);
    const done = (runId: string) => ({ event: 'run_done', data: { run_id: runId, status: 'success' } });
    const finalValues = (await c.threads.getState(thread.thread_id)).values;
    await waitFor(() => all.chunks.length === first.length + second.length + 2 && lifecycle.chunks.length === 4);
    await waitFor(() => JSON.stringify(state.chunks.at(-1)?.data) === JSON.stringify(finalValues));
    await Promise.all([all.stop(), lifecycle.stop(), state.stop()]);

    // Every event of both runs, as their own streams had them, each run followed by run_done; numbered per thread.
    expect(bare(all.chunks)).toEqual([...bare(first), done(ids[0]!), ...bare(second), done(ids[1]!)]);
    expect(rising(all.chunks)).toBe(true);
    expect(all.chunks[0]!.id).toBe('0');
    expect(bare(lifecycle.chunks)).toEqual(
      [first[0], done(ids[0]!), second[0], done(ids[1]!)].map((ch) => ({ event: ch!.event, data: ch!.data })),
    );
    // State after each step: the first run's own values events, then the second run's steps although it streamed
    // updates only.
    expect(new Set(state.chunks.map((ch) => ch.event))).toEqual(new Set(['values']));
    const firstValues = bare(first.filter((ch) => ch.event === 'values'));
    expect(bare(state.chunks.slice(0, firstValues.length))).toEqual(firstValues);
    expect(state.chunks.length).toBeGreaterThan(firstValues.length);
    expect(state.chunks.at(-1)!.data).toEqual(finalValues);
  });

  it('shows a queued run when its turn comes, not when it is queued', async () => {
    const { client: c, seen } = sdk(stack.url, newKey());
    const thread = await c.threads.create();
    const lifecycle = watch((signal) => c.threads.joinStream(thread.thread_id, { streamMode: 'lifecycle', signal }));
    await connected(seen, thread.thread_id, 1);
    const first = collect(
      c.runs.stream(thread.thread_id, 'slow', {
        input: userInput('first'),
        config: { configurable: { wait_ms: 400 } },
      }),
    );
    await waitFor(() => lifecycle.chunks.length >= 1);
    const second = collect(
      c.runs.stream(thread.thread_id, 'agent', { input: userInput('second'), multitaskStrategy: 'enqueue' }),
    );
    await Promise.all([first, second]);
    await waitFor(() => lifecycle.chunks.length === 4);
    await lifecycle.stop();
    expect(lifecycle.chunks.map((ch) => ch.event)).toEqual(['metadata', 'run_done', 'metadata', 'run_done']);
    expect(lifecycle.chunks[1]!.data.run_id).toBe(lifecycle.chunks[0]!.data.run_id);
    expect(lifecycle.chunks[3]!.data.run_id).toBe(lifecycle.chunks[2]!.data.run_id);
  });

  it('resumes after Last-Event-ID, or from the oldest held event with "-"; a join without it starts from now', async () => {
    const { client: c, seen } = sdk(stack.url, newKey());
    const thread = await c.threads.create();
    const { first, second } = await twoRuns(c, thread.thread_id);
    const total = first.length + second.length + 2;

    const fromStart = watch((signal) => c.threads.joinStream(thread.thread_id, { lastEventId: '-', signal }));
    await waitFor(() => fromStart.chunks.length === total);
    const cutAt = fromStart.chunks[3]!.id!;
    const after = watch((signal) => c.threads.joinStream(thread.thread_id, { lastEventId: cutAt, signal }));
    const fromNow = watch((signal) => c.threads.joinStream(thread.thread_id, { signal }));
    await waitFor(() => after.chunks.length === total - 4);
    await connected(seen, thread.thread_id, 3);
    const third = (await collect(
      c.runs.stream(thread.thread_id, 'agent', { input: userInput('three'), streamMode: 'updates' }),
    )) as Chunk[];
    const more = third.length + 1;
    await waitFor(
      () =>
        fromNow.chunks.length === more &&
        fromStart.chunks.length === total + more &&
        after.chunks.length === total - 4 + more,
    );
    await Promise.all([fromStart.stop(), after.stop(), fromNow.stop()]);

    expect(rising(fromStart.chunks)).toBe(true);
    expect(after.chunks).toEqual(fromStart.chunks.slice(4));
    expect(fromNow.chunks).toEqual(fromStart.chunks.slice(total));
    expect(bare(fromNow.chunks)).toEqual([
      ...bare(third),
      { event: 'run_done', data: { run_id: third[0]!.data.run_id, status: 'success' } },
    ]);
  });

  it('reconnects by itself when the connection breaks (Location, Last-Event-ID): no event lost, none twice', async () => {
    // A TCP relay in front of the edge that breaks the first connection whose stream has reached its fifth frame (id 4).
    const relay = await cuttingRelay(stack.url, 4);
    try {
      const { client: c, seen } = sdk(relay.url, newKey());
      const thread = await c.threads.create();
      const followed = watch((signal) => c.threads.joinStream(thread.thread_id, { signal }));
      await connected(seen, thread.thread_id, 1);
      const { first, second } = await twoRuns(c, thread.thread_id);
      const total = first.length + second.length + 2;
      await waitFor(() => followed.chunks.length >= total, 15_000);
      await followed.stop();
      expect(relay.cut()).toBe(true);
      expect(
        seen.filter((s) => new URL(s.url).pathname === `/threads/${thread.thread_id}/stream`).map((s) => s.status),
      ).toEqual([200, 200]);
      expect(followed.chunks.length).toBe(total);
      // The same events as a replay of everything held.
      const replay = watch((signal) => c.threads.joinStream(thread.thread_id, { lastEventId: '-', signal }));
      await waitFor(() => replay.chunks.length === total);
      await replay.stop();
      expect(followed.chunks).toEqual(replay.chunks);
    } finally {
      relay.close();
    }
  });

  it('ends when the thread is deleted; 404 for an unknown thread; 422 naming a bad mode or Last-Event-ID', async () => {
    const { client: c, seen } = sdk(stack.url, newKey());
    const thread = await c.threads.create();
    const followed = watch((signal) => c.threads.joinStream(thread.thread_id, { signal }));
    await connected(seen, thread.thread_id, 1);
    await c.threads.delete(thread.thread_id);
    await followed.ended; // the stream ended by itself
    expect(followed.chunks).toEqual([]);

    const err = (p: AsyncIterable<unknown>) =>
      collect(p).then(
        () => null,
        (e: unknown) => e as { status: number; message: string },
      );
    expect(await err(c.threads.joinStream(thread.thread_id))).toMatchObject({ status: 404 });
    const live = await c.threads.create();
    const badMode = await err(c.threads.joinStream(live.thread_id, { streamMode: 'values' as never }));
    expect(badMode).toMatchObject({ status: 422 });
    expect(badMode!.message).toContain('stream_mode');
    const badId = await err(c.threads.joinStream(live.thread_id, { lastEventId: 'x' }));
    expect(badId).toMatchObject({ status: 422 });
    expect(badId!.message).toContain('last-event-id');
  });
});
