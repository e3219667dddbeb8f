import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../fixtures/app/graphs.ts';
import { newKey, sdk, userInput, type Stack } from '../helpers.ts';
import { type LifecycleBackend, type LifecycleContext, waitFor } from './context.ts';

/** Updating, copying and deleting threads, and their state and history. */
export function threadCases(shared: LifecycleContext): void {
  const { client, slowRun } = shared;
  let stack: Stack;
  let backend: LifecycleBackend;
  beforeAll(() => {
    stack = shared.stack;
    backend = shared.backend;
  });
  describe('threads', () => {
    it('update merges metadata and answers the thread', async () => {
      const c = client();
      const thread = await c.threads.create({ metadata: { a: 1, keep: 'yes' } });
      const updated = await c.threads.update(thread.thread_id, { metadata: { a: 2, b: 3 } });
      expect(updated).toMatchObject({
        thread_id: thread.thread_id,
        metadata: { a: 2, b: 3, keep: 'yes' },
        status: 'idle',
        created_at: thread.created_at,
      });
      expect(await c.threads.get(thread.thread_id)).toEqual(updated);
      expect((await c.threads.search({ metadata: { b: 3 } })).map((t) => t.thread_id)).toContain(thread.thread_id);
      await expect(c.threads.update(randomUUID(), { metadata: { a: 1 } })).rejects.toMatchObject({ status: 404 });
    });

    it('getHistory: one state per checkpoint, newest first (the first is the current state); limit, before and metadata narrow it', async () => {
      const key = newKey();
      const c = sdk(stack.url, key).client;
      const thread = await c.threads.create();
      expect(await c.threads.getHistory(thread.thread_id)).toEqual([]);
      await c.runs.wait(thread.thread_id, 'agent', { input: userInput('one') });
      await c.runs.wait(thread.thread_id, 'agent', { input: userInput('two') });
      const all = await c.threads.getHistory<{ messages: { content: string }[] }>(thread.thread_id, { limit: 100 });
      expect(all[0]).toEqual(await c.threads.getState(thread.thread_id));
      const said = (i: number) => (all[i]!.values.messages ?? []).map((m) => m.content);
      expect(said(0)).toEqual(expect.arrayContaining(['one', 'two']));
      expect(said(all.length - 1)).toEqual([]);
      expect(all.at(-1)!.parent_checkpoint).toBeNull();
      for (let i = 0; i + 1 < all.length; i++) expect(all[i]!.parent_checkpoint).toEqual(all[i + 1]!.checkpoint);
      expect(await c.threads.getHistory(thread.thread_id)).toEqual(all.slice(0, 10));
      expect(await c.threads.getHistory(thread.thread_id, { limit: 2 })).toEqual(all.slice(0, 2));
      const before = { configurable: { checkpoint_id: all[1]!.checkpoint.checkpoint_id } };
      expect(await c.threads.getHistory(thread.thread_id, { limit: 3, before })).toEqual(all.slice(2, 5));
      const inputs = await c.threads.getHistory(thread.thread_id, { limit: 100, metadata: { source: 'input' } });
      expect(inputs).toHaveLength(2);
      expect(inputs).toEqual(all.filter((state) => state.metadata?.source === 'input'));
      // The GET form: limit, and before as a checkpoint id.
      const url = `${stack.url}/threads/${thread.thread_id}/history?limit=2&before=${before.configurable.checkpoint_id}`;
      const res = await fetch(url, { headers: { 'x-api-key': key } });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual(all.slice(2, 4));
      expect((await fetch(url.replace('limit=2', 'limit=0'), { headers: { 'x-api-key': key } })).status).toBe(422);
      await expect(c.threads.getHistory(randomUUID())).rejects.toMatchObject({ status: 404 });
    });

    it('updateState writes as a node (a new checkpoint the thread record follows); getState reads any checkpoint; 409 while busy or before a graph', async () => {
      const c = client();
      const fresh = await c.threads.create();
      await expect(c.threads.updateState(fresh.thread_id, { values: { messages: [] } })).rejects.toMatchObject({
        status: 409,
      });
      const thread = await c.threads.create({ graphId: 'uncompiled' });
      expect(thread.metadata).toMatchObject({ graph_id: 'uncompiled' });
      const contents = (values: unknown) =>
        (values as { messages: { content: string }[] }).messages.map((m) => m.content);

      // The server answers {checkpoint} (the public API's ThreadStateUpdateResponse; the JS client's type says
      // otherwise).
      type Updated = { checkpoint: { thread_id: string; checkpoint_ns: string; checkpoint_id: string } };
      const first = (await c.threads.updateState(thread.thread_id, {
        values: { messages: [{ type: 'human', content: 'typed in' }] },
        asNode: 'echo',
      })) as unknown as Updated;
      expect(first.checkpoint).toMatchObject({ thread_id: thread.thread_id, checkpoint_id: expect.any(String) });
      expect(contents((await c.threads.get(thread.thread_id)).values)).toEqual(['typed in']);
      await c.runs.wait(thread.thread_id, 'uncompiled', { input: userInput('hi') });
      expect(contents((await c.threads.getState(thread.thread_id)).values)).toEqual([
        'typed in',
        'hi',
        'uncompiled ok',
      ]);

      // Any checkpoint, by id in the path or in the body.
      const then = await c.threads.getState(thread.thread_id, first.checkpoint.checkpoint_id);
      expect(contents(then.values)).toEqual(['typed in']);
      expect(then.checkpoint).toEqual(first.checkpoint);
      expect(await c.threads.getState(thread.thread_id, { ...first.checkpoint, checkpoint_map: null })).toEqual(then);
      await expect(c.threads.getState(thread.thread_id, randomUUID())).rejects.toMatchObject({ status: 404 });

      // An edit of the last answer, as the node that wrote it.
      await c.threads.updateState(thread.thread_id, {
        values: { messages: [{ type: 'ai', content: 'edited' }] },
        asNode: 'echo',
      });
      expect(contents((await c.threads.getState(thread.thread_id)).values).at(-1)).toBe('edited');
      expect(contents((await c.threads.get(thread.thread_id)).values).at(-1)).toBe('edited');
      const err = await c.threads
        .updateState(thread.thread_id, { values: { messages: [] }, asNode: 'nobody' })
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ status: 422, message: expect.stringContaining('as_node') });

      // Not while a run is on the thread.
      const busy = await c.threads.create();
      const { runId } = await slowRun(c, busy.thread_id);
      await waitFor(() => registry.started.has(runId));
      await expect(
        c.threads.updateState(busy.thread_id, { values: { messages: [] }, asNode: 'wait' }),
      ).rejects.toMatchObject({ status: 409 });
      await c.runs.cancel(busy.thread_id, runId, true);
    });

    it('patchState merges metadata into the latest checkpoint; values and history stay', async () => {
      const c = client();
      const fresh = await c.threads.create();
      await expect(c.threads.patchState(fresh.thread_id, { reviewed: true })).rejects.toMatchObject({ status: 409 });
      await c.runs.wait(fresh.thread_id, 'agent', { input: userInput('review me') });
      const before = await c.threads.getHistory(fresh.thread_id, { limit: 100 });
      await c.threads.patchState(fresh.thread_id, { reviewed: true, by: 'qa' });
      const after = await c.threads.getHistory(fresh.thread_id, { limit: 100 });
      expect(after[0]!.metadata).toEqual({ ...before[0]!.metadata, reviewed: true, by: 'qa' });
      expect(after.map((s) => [s.checkpoint, s.parent_checkpoint, s.values])).toEqual(
        before.map((s) => [s.checkpoint, s.parent_checkpoint, s.values]),
      );
      expect(after.slice(1).map((s) => s.metadata)).toEqual(before.slice(1).map((s) => s.metadata));
      await expect(c.threads.patchState(randomUUID(), { x: 1 })).rejects.toMatchObject({ status: 404 });
    });

    it('copy makes a new thread with the same metadata, values and history; the two go their own ways', async () => {
      const c = client();
      const thread = await c.threads.create({ metadata: { topic: 'copy me' } });
      await c.runs.wait(thread.thread_id, 'agent', { input: userInput('one') });
      const copy = await c.threads.copy(thread.thread_id);
      expect(copy.thread_id).not.toBe(thread.thread_id);
      expect(copy.metadata).toMatchObject({ topic: 'copy me', graph_id: 'agent' });
      expect(copy.values).toEqual((await c.threads.get(thread.thread_id)).values);
      const [before, copied] = await Promise.all([
        c.threads.getHistory(thread.thread_id, { limit: 100 }),
        c.threads.getHistory(copy.thread_id, { limit: 100 }),
      ]);
      expect(copied.map((s) => s.checkpoint.checkpoint_id)).toEqual(before.map((s) => s.checkpoint.checkpoint_id));
      expect(copied.map((s) => s.values)).toEqual(before.map((s) => s.values));
      expect(copied.every((s) => s.checkpoint.thread_id === copy.thread_id)).toBe(true);

      await c.runs.wait(copy.thread_id, 'agent', { input: userInput('only in the copy') });
      const said = async (id: string) =>
        ((await c.threads.getState(id)).values as { messages: { content: string }[] }).messages.map((m) => m.content);
      expect(await said(copy.thread_id)).toEqual([
        ...(await said(thread.thread_id)),
        'only in the copy',
        expect.stringMatching(/only in the copy/),
      ]);
      expect(await said(thread.thread_id)).not.toContain('only in the copy');
      expect(await c.runs.list(copy.thread_id)).toHaveLength(1);
      // As the official server: copying a thread that is not there (or not visible) answers 409.
      await expect(c.threads.copy(randomUUID())).rejects.toMatchObject({ status: 409 });
    });

    it('delete removes the thread, its runs and its checkpoints', async () => {
      const c = client();
      const thread = await c.threads.create();
      await c.runs.wait(thread.thread_id, 'agent', { input: userInput('remember me') });
      const [run] = await c.runs.list(thread.thread_id);
      const config = { configurable: { thread_id: thread.thread_id } };
      expect(await backend.checkpointer.getTuple(config)).toBeDefined();

      expect(await c.threads.delete(thread.thread_id)).toBeUndefined();
      await expect(c.threads.get(thread.thread_id)).rejects.toMatchObject({ status: 404 });
      await expect(c.threads.getState(thread.thread_id)).rejects.toMatchObject({ status: 404 });
      await expect(c.runs.list(thread.thread_id)).rejects.toMatchObject({ status: 404 });
      expect(await backend.store.getRun(run!.run_id)).toBeNull();
      expect(await backend.checkpointer.getTuple(config)).toBeUndefined();
      if (backend.leftovers) expect(await backend.leftovers(thread.thread_id)).toEqual([]);
      await expect(c.threads.delete(thread.thread_id)).rejects.toMatchObject({ status: 404 });
    });

    it('delete cancels a running run first, whose record does not come back', async () => {
      const c = client();
      const thread = await c.threads.create();
      const { runId, chunks } = await slowRun(c, thread.thread_id);
      await waitFor(() => registry.started.has(runId));
      await c.threads.delete(thread.thread_id);
      expect((await chunks).at(-1)).toMatchObject({ event: 'error', data: { error: 'CancelledError' } });
      expect(registry.cancelled.has(runId)).toBe(true);
      expect(await backend.store.getRun(runId)).toBeNull();
      expect(await backend.store.getThread(thread.thread_id)).toBeNull();
    });
  });
}
