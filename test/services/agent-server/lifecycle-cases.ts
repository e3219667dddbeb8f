import { randomUUID } from 'node:crypto';
import type { BaseCheckpointSaver } from '@langchain/langgraph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentStore } from '../../../src/services/agent-server/store/agent-store.ts';
import { registry } from './fixtures/app/graphs.ts';
import { collect, eventually, newKey, sdk, startStack, userInput, type Stack } from './helpers.ts';

/**
 * Updating and deleting assistants and threads, and controlling runs
 * (cancel, join, join stream, delete), with the public JS client through
 * the edge. Run once per store (memory, Redis): the backend must not
 * change an answer. `leftovers` lists what the backend still keeps of a
 * deleted thread (Redis keys), when it can tell.
 */
export interface LifecycleBackend {
  readonly store: AgentStore;
  readonly checkpointer: BaseCheckpointSaver;
  leftovers?(threadId: string): Promise<string[]>;
}

type Chunk = { event: string; data: any; id?: string };
const waitFor = (check: () => boolean) => eventually(async () => (check() ? true : undefined));

export function lifecycleCases(name: string, make: () => Promise<LifecycleBackend>): void {
  describe(`${name}: update, delete and run control through the SDK`, () => {
    let stack: Stack;
    let backend: LifecycleBackend;
    beforeAll(async () => {
      backend = await make();
      stack = await startStack({ store: backend.store, checkpointer: backend.checkpointer });
    });
    afterAll(() => stack?.close());

    const client = () => sdk(stack.url, newKey()).client;
    /** A run of the `slow` graph that waits until cancelled (or `waitMs`), streamed in the background. */
    const slowRun = async (
      c: ReturnType<typeof client>,
      threadId: string,
      options: { waitMs?: number; strategy?: 'enqueue' } = {},
    ) => {
      let runId = '';
      const chunks = collect(
        c.runs.stream(threadId, 'slow', {
          input: userInput('x'),
          config: { configurable: { wait_ms: options.waitMs ?? 30_000 } },
          multitaskStrategy: options.strategy,
          onRunCreated: (m) => (runId = m.run_id),
        }),
      ) as Promise<Chunk[]>;
      await waitFor(() => runId !== '');
      return { runId, chunks };
    };

    describe('assistants', () => {
      it('update replaces config and context, merges metadata, renames and bumps the version', async () => {
        const c = client();
        const made = await c.assistants.create({
          graphId: 'agent',
          metadata: { a: 1 },
          name: 'before',
          config: { configurable: { x: 1 } },
        });
        const updated = await c.assistants.update(made.assistant_id, {
          metadata: { b: 2 },
          name: 'after',
          description: 'described',
          config: { configurable: { y: 2 } },
          context: { lang: 'fr' },
        });
        expect(updated).toMatchObject({
          assistant_id: made.assistant_id,
          graph_id: 'agent',
          metadata: { a: 1, b: 2 },
          name: 'after',
          description: 'described',
          config: { configurable: { y: 2 } },
          context: { lang: 'fr' },
          version: 2,
          created_at: made.created_at,
        });
        expect(updated.updated_at >= made.updated_at).toBe(true);
        expect(await c.assistants.get(made.assistant_id)).toEqual(updated);
        const moved = await c.assistants.update(made.assistant_id, { graphId: 'slow' });
        expect(moved).toMatchObject({ graph_id: 'slow', name: 'after', metadata: { a: 1, b: 2 }, version: 3 });
      });

      it('getVersions lists every version newest first; setLatest brings one back, and the next update goes after the newest', async () => {
        const c = client();
        const made = await c.assistants.create({ graphId: 'agent', name: 'v1', metadata: { stage: 'draft' } });
        await c.assistants.update(made.assistant_id, { name: 'v2' });
        await c.assistants.update(made.assistant_id, { name: 'v3', metadata: { stage: 'final' } });
        const versions = await c.assistants.getVersions(made.assistant_id);
        expect(versions.map((v) => [v.version, v.name])).toEqual([
          [3, 'v3'],
          [2, 'v2'],
          [1, 'v1'],
        ]);
        expect(versions[2]).toMatchObject({
          assistant_id: made.assistant_id,
          graph_id: 'agent',
          metadata: { stage: 'draft' },
          created_at: made.created_at,
        });
        expect(
          (await c.assistants.getVersions(made.assistant_id, { metadata: { stage: 'final' } })).map((v) => v.version),
        ).toEqual([3]);
        expect(
          (await c.assistants.getVersions(made.assistant_id, { limit: 1, offset: 1 })).map((v) => v.version),
        ).toEqual([2]);
        const back = await c.assistants.setLatest(made.assistant_id, 1);
        expect(back).toMatchObject({ version: 1, name: 'v1', metadata: { stage: 'draft' } });
        expect(await c.assistants.get(made.assistant_id)).toEqual(back);
        expect(await c.assistants.update(made.assistant_id, { description: 'after going back' })).toMatchObject({
          version: 4,
          name: 'v1',
        });
        await expect(c.assistants.setLatest(made.assistant_id, 9)).rejects.toMatchObject({ status: 404 });
        await expect(c.assistants.getVersions(randomUUID())).rejects.toMatchObject({ status: 404 });
      });

      it('getGraph answers the nodes and edges of the graph; xray is validated', async () => {
        const key = newKey();
        const c = sdk(stack.url, key).client;
        const drawn = await c.assistants.getGraph('failing', { xray: true });
        expect(drawn.nodes.map((n) => n.id)).toEqual(['__start__', 'first', 'second', '__end__']);
        expect(drawn.edges).toEqual(
          expect.arrayContaining([expect.objectContaining({ source: 'first', target: 'second', conditional: false })]),
        );
        expect(
          (await fetch(`${stack.url}/assistants/failing/graph?xray=maybe`, { headers: { 'x-api-key': key } })).status,
        ).toBe(422);
        await expect(c.assistants.getGraph(randomUUID())).rejects.toMatchObject({ status: 404 });
      });

      it('update answers 404 for an unknown assistant or graph, 422 for a bad body', async () => {
        const c = client();
        await expect(c.assistants.update(randomUUID(), { name: 'x' })).rejects.toMatchObject({ status: 404 });
        const made = await c.assistants.create({ graphId: 'agent' });
        await expect(c.assistants.update(made.assistant_id, { graphId: 'no-such-graph' })).rejects.toMatchObject({
          status: 404,
        });
        const bad = await c.assistants
          .update(made.assistant_id, { metadata: 'nope' as never })
          .catch((e: unknown) => e);
        expect(bad).toMatchObject({ status: 422 });
        expect((bad as Error).message).toMatch(/metadata/);
        expect((await c.assistants.get(made.assistant_id)).version).toBe(1);
      });

      it('delete removes the assistant (404 afterwards), and with deleteThreads its threads', async () => {
        const c = client();
        const made = await c.assistants.create({ graphId: 'agent' });
        const kept = await c.threads.create();
        const ran = await c.threads.create();
        await c.runs.wait(ran.thread_id, made.assistant_id, { input: userInput('hello') });
        expect(await c.assistants.delete(made.assistant_id)).toBeUndefined();
        await expect(c.assistants.get(made.assistant_id)).rejects.toMatchObject({ status: 404 });
        await expect(c.assistants.delete(made.assistant_id)).rejects.toMatchObject({ status: 404 });
        // Without deleteThreads its threads stay.
        expect((await c.threads.get(ran.thread_id)).metadata).toMatchObject({ assistant_id: made.assistant_id });

        const second = await c.assistants.create({ graphId: 'agent' });
        await c.runs.wait(ran.thread_id, second.assistant_id, { input: userInput('again') });
        await c.assistants.delete(second.assistant_id, { deleteThreads: true });
        await expect(c.threads.get(ran.thread_id)).rejects.toMatchObject({ status: 404 });
        expect((await c.threads.get(kept.thread_id)).thread_id).toBe(kept.thread_id);
      });
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
        await expect(c.threads.copy(randomUUID())).rejects.toMatchObject({ status: 404 });
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

    describe('runs', () => {
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
          expect(everything[0]).toMatchObject({ event: 'metadata', data: { run_id: run.run_id }, id: '1' });
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
          const updates = (await collect(
            c.runs.joinStream(threadId, run.run_id, { streamMode: 'updates' }),
          )) as Chunk[];
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

      it('create answers 422 naming after_seconds or webhook, which this server does not support', async () => {
        const c = client();
        const thread = await c.threads.create();
        const delayed = await c.runs
          .create(thread.thread_id, 'agent', { input: userInput('later'), afterSeconds: 5 })
          .catch((e: unknown) => e);
        expect(delayed).toMatchObject({ status: 422, message: expect.stringContaining('after_seconds') });
        const hooked = await c.runs
          .create(thread.thread_id, 'agent', { input: userInput('x'), webhook: 'http://127.0.0.1:9/hook' })
          .catch((e: unknown) => e);
        expect(hooked).toMatchObject({ status: 422, message: expect.stringContaining('webhook') });
        expect(await c.runs.list(thread.thread_id)).toEqual([]);
      });

      it('join of a failed run answers the state it reached', async () => {
        const c = client();
        const thread = await c.threads.create();
        await expect(c.runs.wait(thread.thread_id, 'failing', { input: userInput('x') })).rejects.toThrow(
          /the tool broke/,
        );
        const [run] = await c.runs.list(thread.thread_id);
        expect(run!.status).toBe('error');
        const joined = (await c.runs.join(thread.thread_id, run!.run_id)) as { messages: { content: string }[] };
        expect(joined.messages.map((m) => m.content)).toEqual(['x', 'step one done']);
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
        const resumed = (await collect(
          c.runs.joinStream(thread.thread_id, runId, { lastEventId: own[2]!.id }),
        )) as Chunk[];
        await original;
        expect(own.map((ch) => ch.id)).toEqual(own.map((_, i) => String(i + 1)));
        expect(own.length).toBeGreaterThan(10);
        expect(resumed).toEqual(own.slice(3));
        // The run has ended: its frames are still held, and a client that saw them all gets nothing more.
        expect(
          await collect(c.runs.joinStream(thread.thread_id, runId, { lastEventId: String(own.length - 2) })),
        ).toEqual(own.slice(-2));
        expect(await collect(c.runs.joinStream(thread.thread_id, runId, { lastEventId: String(own.length) }))).toEqual(
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
        expect(replay.map((ch) => ch.id)).toEqual(replay.map((_, i) => String(i + 1)));
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
          await expect(collect(c.runs.joinStream(t, r))).rejects.toMatchObject({ status: 404 });
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
        const join = await fetch(
          `${stack.url}/threads/${randomUUID()}/runs/${randomUUID()}/stream?stream_mode=events`,
          { headers },
        );
        expect(join.status).toBe(422);
        expect(JSON.stringify(await join.json())).toContain('stream_mode');
      });
    });
  });
}
