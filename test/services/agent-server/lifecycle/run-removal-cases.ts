import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from 'vitest';
import { registry } from '../fixtures/app/graphs.ts';
import { collect, newKey, userInput, type Stack } from '../helpers.ts';
import { type LifecycleContext, waitFor } from './context.ts';

/** Deleting a run, and the answers for unknown runs and bad parameters. */
export function runRemovalCases(shared: LifecycleContext): void {
  const { client, slowRun } = shared;
  let stack: Stack;
  beforeAll(() => {
    stack = shared.stack;
  });
  it('delete removes a finished run; a running one answers 409', async () => {
    const c = client();
    const thread = await c.threads.create();
    const { runId, chunks } = await slowRun(c, thread.thread_id);
    await waitFor(() => registry.started.has(runId));
    const busy = await c.runs.delete(thread.thread_id, runId).catch((e: unknown) => e);
    expect(busy).toMatchObject({ status: 409 });
    expect((busy as Error).message).toMatch(/cancel it/);
    await c.runs.cancel(thread.thread_id, runId, true);
    await chunks;
    expect(await c.runs.delete(thread.thread_id, runId)).toBeUndefined();
    await expect(c.runs.get(thread.thread_id, runId)).rejects.toMatchObject({ status: 404 });
    expect(await c.runs.list(thread.thread_id)).toEqual([]);
    expect((await c.threads.get(thread.thread_id)).thread_id).toBe(thread.thread_id);
    await expect(c.runs.delete(thread.thread_id, runId)).rejects.toMatchObject({ status: 404 });
  });

  it('answers 404 for an unknown thread or run, and for a run of another thread', async () => {
    const c = client();
    const thread = await c.threads.create();
    const other = await c.threads.create();
    await c.runs.wait(thread.thread_id, 'agent', { input: userInput('hi') });
    const [run] = await c.runs.list(thread.thread_id);
    for (const [t, r] of [
      [randomUUID(), run!.run_id],
      [thread.thread_id, randomUUID()],
      [other.thread_id, run!.run_id],
    ] as const) {
      await expect(c.runs.cancel(t, r)).rejects.toMatchObject({ status: 404 });
      await expect(c.runs.join(t, r)).rejects.toMatchObject({ status: 404 });
      // A joined stream opens and says 404 in one error event, as the official servers do.
      expect(await collect(c.runs.joinStream(t, r))).toMatchObject([
        { event: 'error', data: { message: expect.stringContaining('404') } },
      ]);
      await expect(c.runs.delete(t, r)).rejects.toMatchObject({ status: 404 });
    }
    expect((await c.runs.get(thread.thread_id, run!.run_id)).status).toBe('success');
  });

  it('answers 422 naming the query parameter for a bad cancel flag or stream mode', async () => {
    const headers = { 'x-api-key': newKey() };
    const cancel = await fetch(`${stack.url}/threads/${randomUUID()}/runs/${randomUUID()}/cancel?wait=maybe`, {
      method: 'POST',
      headers,
    });
    expect(cancel.status).toBe(422);
    expect(((await cancel.json()) as { detail: { loc: string[] }[] }).detail[0]!.loc).toEqual(['query', 'wait']);
    const join = await fetch(`${stack.url}/threads/${randomUUID()}/runs/${randomUUID()}/stream?stream_mode=bogus`, {
      headers,
    });
    expect(join.status).toBe(422);
    expect(JSON.stringify(await join.json())).toContain('stream_mode');
  });
}
