import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, newKey, sdk, startStack, userInput, type Stack } from '../helpers.ts';

/**
 * Issue 27, item 2: what the official server added, through the edge with the unmodified client (fixtures/today-app:
 * threads filtered by owner).
 */
const TODAY_APP = fileURLToPath(new URL('../fixtures/today-app/langgraph.json', import.meta.url));

describe('what the official server added', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ configPath: TODAY_APP });
  });
  afterAll(async () => {
    await stack.close();
  });
  const as = (user: string) => sdk(stack.url, newKey(), { 'x-user': user });

  it('lets a streamed run finish when its client leaves (on_disconnect defaults to continue)', async () => {
    const { client } = as('ann');
    const thread = await client.threads.create();
    const leave = new AbortController();
    let runId = '';
    const stream = client.runs.stream(thread.thread_id, 'slow', {
      input: userInput('hi'),
      // Long enough that a cancel on disconnect would surely stop it.
      config: { configurable: { wait_ms: 2000 } },
      signal: leave.signal,
      onRunCreated: (m) => (runId = m.run_id),
    });
    await stream.next();
    leave.abort();
    await stream.return(undefined).catch(() => undefined);
    const run = await eventually(async () => {
      const r = await client.runs.get(thread.thread_id, runId);
      return r.status === 'pending' || r.status === 'running' ? undefined : r;
    });
    expect(run.status).toBe('success');
  });

  it('honours durability and the deprecated checkpoint_during: exit writes only the final checkpoint', async () => {
    const { client } = as('ann');
    const history = async (options: Record<string, unknown>) => {
      const thread = await client.threads.create();
      await client.runs.wait(thread.thread_id, 'slow', {
        input: userInput('hi'),
        config: { configurable: { wait_ms: 1 } },
        ...options,
      });
      return (await client.threads.getHistory(thread.thread_id)).length;
    };
    const full = await history({});
    expect(full).toBeGreaterThan(1);
    expect(await history({ durability: 'exit' })).toBe(1);
    expect(await history({ checkpointDuring: false })).toBe(1);
    expect(await history({ durability: 'sync' })).toBe(full);
  });

  it('answers PATCH /threads/{id} with Prefer: return=minimal as 204 without a body', async () => {
    const { client, seen } = as('ann');
    const thread = await client.threads.create();
    await client.threads.update(thread.thread_id, { metadata: { topic: 'x' }, returnMinimal: true });
    expect(seen.at(-1)?.status).toBe(204);
    expect((await client.threads.get(thread.thread_id)).metadata).toMatchObject({ topic: 'x' });
  });

  it('prunes threads: delete removes them, keep_latest keeps only the latest state; others are not counted', async () => {
    const { client } = as('ann');
    const gone = await client.threads.create();
    const kept = await client.threads.create();
    const bobs = await as('bob').client.threads.create();
    for (const t of [gone, kept]) {
      await client.runs.wait(t.thread_id, 'slow', {
        input: userInput('one'),
        config: { configurable: { wait_ms: 1 } },
      });
      await client.runs.wait(t.thread_id, 'slow', {
        input: userInput('two'),
        config: { configurable: { wait_ms: 1 } },
      });
    }
    const before = await client.threads.getState(kept.thread_id);
    expect((await client.threads.getHistory(kept.thread_id)).length).toBeGreaterThan(2);
    expect(await client.threads.prune([gone.thread_id, bobs.thread_id])).toEqual({ pruned_count: 1 });
    await expect(client.threads.get(gone.thread_id)).rejects.toMatchObject({ status: 404 });
    await as('bob').client.threads.get(bobs.thread_id);
    expect(await client.threads.prune([kept.thread_id], { strategy: 'keep_latest' })).toEqual({ pruned_count: 1 });
    expect(await client.threads.getHistory(kept.thread_id)).toHaveLength(1);
    expect((await client.threads.getState(kept.thread_id)).values).toEqual(before.values);
  });

  it('cancels runs in bulk, by ids or by status, only those the caller may change', async () => {
    const { client } = as('ann');
    const later = { input: userInput('hi'), afterSeconds: 60 };
    const a = await client.threads.create();
    const b = await client.threads.create();
    const runA = await client.runs.create(a.thread_id, 'slow', later);
    const runB = await client.runs.create(b.thread_id, 'slow', later);
    const bobThread = await as('bob').client.threads.create();
    const bobRun = await as('bob').client.runs.create(bobThread.thread_id, 'slow', later);
    await client.runs.cancelMany({ runIds: [runA.run_id, bobRun.run_id] });
    const status = async (c: typeof client, t: string, r: string) => (await c.runs.get(t, r)).status;
    await eventually(async () =>
      (await status(client, a.thread_id, runA.run_id)) === 'interrupted' ? true : undefined,
    );
    expect(await status(client, b.thread_id, runB.run_id)).toBe('pending');
    expect(await status(as('bob').client, bobThread.thread_id, bobRun.run_id)).toBe('pending');
    await client.runs.cancelMany({ status: 'pending' });
    await eventually(async () =>
      (await status(client, b.thread_id, runB.run_id)) === 'interrupted' ? true : undefined,
    );
    expect(await status(as('bob').client, bobThread.thread_id, bobRun.run_id)).toBe('pending');
    await as('bob').client.runs.cancelMany({ threadId: bobThread.thread_id, status: 'all' });
    await eventually(async () =>
      (await status(as('bob').client, bobThread.thread_id, bobRun.run_id)) === 'interrupted' ? true : undefined,
    );
  });

  it('gives threads state_updated_at, moved by runs and state updates, and sorts by it', async () => {
    const { client } = as('dan');
    const first = await client.threads.create({ metadata: { topic: 'state-sort' } });
    const second = await client.threads.create({ metadata: { topic: 'state-sort' } });
    expect(first.state_updated_at).toBe(first.created_at);
    await client.runs.wait(first.thread_id, 'slow', {
      input: userInput('hi'),
      config: { configurable: { wait_ms: 1 } },
    });
    const ran = await client.threads.get(first.thread_id);
    expect(Date.parse(ran.state_updated_at)).toBeGreaterThan(Date.parse(second.created_at));
    const order = async () =>
      (
        await client.threads.search({
          metadata: { topic: 'state-sort' },
          sortBy: 'state_updated_at',
          sortOrder: 'desc',
        })
      ).map((t) => t.thread_id);
    expect(await order()).toEqual([first.thread_id, second.thread_id]);
    // Now bound to its graph by the first run, the thread's state is updated by hand: it moves first.
    await client.threads.updateState(first.thread_id, { values: { messages: [{ role: 'user', content: 'x' }] } });
    expect(await order()).toEqual([first.thread_id, second.thread_id]);
    await client.runs.wait(second.thread_id, 'slow', {
      input: userInput('hi'),
      config: { configurable: { wait_ms: 1 } },
    });
    expect(await order()).toEqual([second.thread_id, first.thread_id]);
  });
});
