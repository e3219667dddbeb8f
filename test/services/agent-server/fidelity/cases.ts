import { fileURLToPath } from 'node:url';
import type { BaseCheckpointSaver } from '@langchain/langgraph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentStore } from '../../../../src/services/agent-server/store/agent-store.ts';
import { collect, eventually, newKey, sdk, startStack, userInput, type Stack } from '../helpers.ts';

/** The graphs these cases run: a chat model streaming tokens, a tool call, a subgraph that asks a human. */
export const STREAM_APP = fileURLToPath(new URL('../fixtures/stream-app/langgraph.json', import.meta.url));

export interface FidelityBackend {
  readonly store: AgentStore;
  readonly checkpointer: BaseCheckpointSaver;
}

type Chunk = { event: string; data: any; id?: string };
type Client = ReturnType<typeof sdk>['client'];
const ALL_MODES = [
  'values',
  'updates',
  'messages',
  'messages-tuple',
  'custom',
  'debug',
  'events',
  'tasks',
  'checkpoints',
] as const;

const contents = (messages: { content: unknown }[]) => messages.map((m) => m.content);

/**
 * Streams and state as the official Agent Server gives them (issue 16), with the unmodified JS client through the
 * edge, against one backend (memory, Redis).
 */
export function fidelityCases(name: string, make: () => Promise<FidelityBackend>): void {
  describe(`${name}: streams and state as the official server gives them`, () => {
    let stack: Stack;
    beforeAll(async () => {
      const backend = await make();
      stack = await startStack({ configPath: STREAM_APP, store: backend.store, checkpointer: backend.checkpointer });
    });
    afterAll(() => stack?.close());
    const client = (): Client => sdk(stack.url, newKey()).client;
    const stream = async (c: Client, threadId: string | null, graph: string, options: Record<string, unknown>) =>
      collect<Chunk>((c.runs.stream as any)(threadId, graph, options));

    it('accepts every stream mode alone, with its own event names and payloads', async () => {
      const c = client();
      const seen: Record<string, string[]> = {};
      for (const mode of ALL_MODES) {
        const chunks = await stream(c, null, 'tools', { input: userInput('time?'), streamMode: mode });
        expect(chunks[0]!.event).toBe('metadata');
        // No mode shows the authenticated user (it is in the run's configurable) or LangGraph's internal keys.
        expect(JSON.stringify(chunks)).not.toMatch(/"(langgraph_auth_user|service_auth_user|__pregel_[a-z_]+)":/);
        seen[mode] = [...new Set(chunks.slice(1).map((ch) => ch.event))];
        if (mode === 'debug') {
          expect(new Set(chunks.slice(1).map((ch) => ch.data.type))).toEqual(
            new Set(['checkpoint', 'task', 'task_result']),
          );
          const checkpoint = chunks.filter((ch) => ch.data.type === 'checkpoint').at(-1)!.data.payload;
          expect(checkpoint.checkpoint).toMatchObject({ checkpoint_ns: '', checkpoint_id: expect.any(String) });
          expect(checkpoint.parent_checkpoint).toMatchObject({ checkpoint_id: expect.any(String) });
          expect(checkpoint.parent_config.configurable.checkpoint_id).toBe(checkpoint.parent_checkpoint.checkpoint_id);
          expect(JSON.stringify(checkpoint.config)).not.toMatch(/__pregel|langgraph_auth_user|callbacks/);
        }
        if (mode === 'tasks') {
          const [start, end] = chunks.filter((ch) => ch.data.name === 'tool').map((ch) => ch.data);
          expect(start).toMatchObject({ id: expect.any(String), name: 'tool', triggers: expect.any(Array) });
          expect(end).toMatchObject({ id: start.id, name: 'tool', error: null });
          expect(end.result.messages[0]).toMatchObject({ type: 'tool', content: 'noon' });
        }
        if (mode === 'checkpoints') {
          const last = chunks.at(-1)!.data;
          expect(last).toMatchObject({ next: [], checkpoint: { checkpoint_id: expect.any(String) } });
          expect(contents(last.values.messages)).toEqual(['time?', '', 'noon', 'Hello there']);
        }
        if (mode === 'events') {
          const kinds = new Set(chunks.slice(1).map((ch) => ch.data.event));
          for (const kind of ['on_chain_start', 'on_chain_end', 'on_chat_model_start', 'on_chat_model_stream'])
            expect(kinds).toContain(kind);
          const tokens = chunks.filter((ch) => ch.data.event === 'on_chat_model_stream');
          expect(tokens.map((ch) => ch.data.data.chunk.content).join('')).toBe('Hello there');
        }
        if (mode === 'custom') expect(chunks.slice(1).map((ch) => ch.data)).toEqual([{ looked_up: 'clock' }]);
      }
      expect(seen).toEqual({
        values: ['values'],
        updates: ['updates'],
        messages: ['messages/complete', 'messages/metadata', 'messages/partial'],
        'messages-tuple': ['messages'],
        custom: ['custom'],
        debug: ['debug'],
        events: ['events'],
        tasks: ['tasks'],
        checkpoints: ['checkpoints'],
      });
    });

    it('accepts every mode at once; stream_subgraphs names subgraph events with their namespace', async () => {
      const c = client();
      const all = await stream(c, null, 'chat', { input: userInput('hi'), streamMode: [...ALL_MODES] });
      expect(new Set(all.map((ch) => ch.event.split('/')[0]))).toEqual(
        new Set(['metadata', 'values', 'updates', 'messages', 'debug', 'events', 'tasks', 'checkpoints']),
      );
      const thread = await c.threads.create();
      const nested = await stream(c, thread.thread_id, 'nested', {
        input: userInput('go'),
        streamMode: ['updates', 'values'],
        streamSubgraphs: true,
      });
      const names = nested.map((ch) => ch.event);
      const sub = names.find((n) => n.startsWith('updates|'));
      expect(sub).toMatch(/^updates\|child:[0-9a-f-]{36}$/);
      expect(nested.find((ch) => ch.event === sub)!.data).toHaveProperty('draft');
      expect(names).toContain(sub!.replace('updates', 'values'));
      // Without stream_subgraphs, no namespaced event.
      const flat = await stream(c, null, 'nested', { input: userInput('go'), streamMode: ['updates'] });
      expect(flat.some((ch) => ch.event.includes('|'))).toBe(false);
    });

    it('a run streaming events (LangChain callbacks) stops when cancelled, like any other', async () => {
      const c = client();
      const thread = await c.threads.create();
      const run = await c.runs.create(thread.thread_id, 'slow', { input: userInput('x'), streamMode: ['events'] });
      await eventually(async () => {
        const state = await c.threads.getState(thread.thread_id);
        return contents((state.values as any).messages ?? []).includes('started') ? true : undefined;
      });
      await c.runs.cancel(thread.thread_id, run.run_id, true);
      expect((await c.runs.get(thread.thread_id, run.run_id)).status).toBe('interrupted');
      const events = (await collect(c.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: '-1' }))) as Chunk[];
      expect(events.filter((ch) => ch.event === 'events').length).toBeGreaterThan(2);
      expect(events.at(-1)).toMatchObject({ event: 'error', data: { error: 'CancelledError' } });
      expect((await c.threads.get(thread.thread_id)).status).toBe('idle');
    });

    it('messages: partial tokens, then each state before its messages/complete (input and tool messages too)', async () => {
      const chunks = await stream(client(), null, 'tools', {
        input: userInput('time?'),
        streamMode: ['values', 'messages'],
      });
      const order = chunks.slice(1).map((ch) => {
        if (ch.event === 'values') return `values:${ch.data.messages.length}`;
        if (ch.event === 'messages/complete') return `complete:${ch.data.map((m: any) => m.type).join(',')}`;
        return ch.event;
      });
      const partials = chunks.filter((ch) => ch.event === 'messages/partial').map((ch) => ch.data[0].content);
      expect(partials.at(-1)).toBe('Hello there');
      expect(partials.length).toBeGreaterThan(3);
      expect(partials.every((p, i) => i === 0 || p.startsWith(partials[i - 1]))).toBe(true);
      const squeezed = order.filter((e, i) => !(e === 'messages/partial' && order[i - 1] === 'messages/partial'));
      expect(squeezed).toEqual([
        'values:1',
        'complete:human',
        'values:2',
        'complete:ai',
        'values:3',
        'complete:tool',
        'messages/metadata',
        'messages/partial',
        'values:4',
        'complete:ai',
      ]);
      const metadata = chunks.find((ch) => ch.event === 'messages/metadata')!.data;
      const [id] = Object.keys(metadata);
      expect(metadata[id!].metadata).toMatchObject({ langgraph_node: 'model' });
      expect(chunks.at(-1)!.data[0]).toMatchObject({ id, type: 'ai', content: 'Hello there' });
    });

    it('messages: the tokens of a chat model inside a subgraph stream too, without stream_subgraphs', async () => {
      const chunks = await stream(client(), null, 'deep', {
        input: userInput('hi'),
        streamMode: ['messages', 'updates'],
      });
      const partials = chunks.filter((ch) => ch.event === 'messages/partial').map((ch) => ch.data[0].content);
      expect(partials.length).toBeGreaterThan(3);
      expect(partials.at(-1)).toBe('Hello there');
      const metadata = Object.values(chunks.find((ch) => ch.event === 'messages/metadata')!.data)[0] as any;
      expect(metadata.metadata.langgraph_checkpoint_ns).toMatch(/^inner:.*\|model:/);
      // Nothing else of the subgraph: no namespaced event, and updates of the root graph only.
      expect(chunks.some((ch) => ch.event.includes('|'))).toBe(false);
      expect(chunks.filter((ch) => ch.event === 'updates').map((ch) => Object.keys(ch.data))).toEqual([['inner']]);
      expect(chunks.filter((ch) => ch.event === 'messages/complete').map((ch) => ch.data[0].content)).toEqual([
        'hi',
        'Hello there',
      ]);
    });

    it('numbers events from 0 and resumes after an id; Last-Event-ID -1 replays from the first', async () => {
      const c = client();
      const thread = await c.threads.create();
      const run = await c.runs.create(thread.thread_id, 'chat', { input: userInput('hi'), streamResumable: true });
      await c.runs.join(thread.thread_id, run.run_id);
      const all = (await collect(c.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: '-1' }))) as Chunk[];
      expect(all.map((ch) => ch.id)).toEqual(all.map((_, i) => String(i)));
      expect(all[0]).toMatchObject({ event: 'metadata', id: '0' });
      const rest = (await collect(c.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: '2' }))) as Chunk[];
      expect(rest.map((ch) => ch.id)).toEqual(all.slice(3).map((ch) => ch.id));
      const res = await fetch(`${stack.url}/threads/${thread.thread_id}/runs/${run.run_id}/stream`, {
        headers: { 'x-api-key': newKey(), 'last-event-id': 'abc' },
      });
      expect(res.status).toBe(422);
    });

    it('a breakpoint (interrupt_before / interrupt_after) leaves the thread interrupted, found by its status', async () => {
      const c = client();
      const before = await c.threads.create();
      await c.runs.wait(before.thread_id, 'tools', { input: userInput('time?'), interruptBefore: ['tool'] });
      const after = await c.threads.create();
      await c.runs.wait(after.thread_id, 'tools', { input: userInput('time?'), interruptAfter: ['agent'] });
      for (const t of [before, after]) {
        const thread = await c.threads.get(t.thread_id);
        expect(thread.status).toBe('interrupted');
        expect((await c.threads.getState(t.thread_id)).next).toEqual(['tool']);
      }
      const found = await c.threads.search({ status: 'interrupted', limit: 100 });
      expect(found.map((t) => t.thread_id)).toEqual(expect.arrayContaining([before.thread_id, after.thread_id]));
      // Going on from the breakpoint ends it.
      await c.runs.wait(before.thread_id, 'tools', { input: null });
      expect((await c.threads.get(before.thread_id)).status).toBe('idle');
    });

    it('state: subgraph tasks name their checkpoint; subgraphs nests their state, readable and updatable', async () => {
      const c = client();
      const thread = await c.threads.create();
      await c.runs.wait(thread.thread_id, 'nested', { input: userInput('go') });
      expect((await c.threads.get(thread.thread_id)).status).toBe('interrupted');
      const flat = await c.threads.getState(thread.thread_id);
      const [task] = flat.tasks as any[];
      expect(task).toMatchObject({
        name: 'child',
        path: ['__pregel_pull', 'child'],
        checkpoint: { thread_id: thread.thread_id, checkpoint_ns: `child:${task.id}` },
        state: null,
        result: null,
        error: null,
      });
      // The task's checkpoint reads the subgraph's own state...
      const own = await c.threads.getState(thread.thread_id, task.checkpoint);
      expect(own.next).toEqual(['review']);
      expect(own.checkpoint).toMatchObject({ checkpoint_ns: `child:${task.id}` });
      // ...and so does the whole state read with subgraphs, nested in the task.
      const deep = await c.threads.getState(thread.thread_id, undefined, { subgraphs: true });
      const inner = (deep.tasks[0] as any).state;
      expect(inner.next).toEqual(['review']);
      expect(contents(inner.values.messages)).toEqual(['go', 'draft ready']);
      expect(inner.checkpoint).toMatchObject({ checkpoint_ns: `child:${task.id}`, checkpoint_id: expect.any(String) });
      expect(inner.tasks[0]).toMatchObject({
        name: 'review',
        interrupts: [{ value: { question: 'approve the draft?' } }],
      });
      // Human in the loop inside the subgraph: edit its state through its checkpoint, then resume.
      await c.threads.updateState(thread.thread_id, {
        values: { messages: [{ type: 'ai', content: 'draft edited' }] },
        checkpoint: task.checkpoint,
        asNode: 'draft',
      });
      const edited = (await c.threads.getState(thread.thread_id, undefined, { subgraphs: true })).tasks[0] as any;
      expect(contents(edited.state.values.messages)).toEqual(['go', 'draft ready', 'draft edited']);
      const end = (await c.runs.wait(thread.thread_id, 'nested', { command: { resume: 'yes' } })) as any;
      expect(contents(end.messages).slice(-2)).toEqual(['review: yes', 'wrapped']);
      expect((await c.threads.get(thread.thread_id)).status).toBe('idle');
    });

    it('a run from an earlier checkpoint (useStream editing a message) forks the thread there', async () => {
      const c = client();
      const thread = await c.threads.create();
      await c.runs.wait(thread.thread_id, 'chat', { input: userInput('first') });
      await c.runs.wait(thread.thread_id, 'chat', { input: userInput('second') });
      const history = await c.threads.getHistory(thread.thread_id, { limit: 100 });
      // The state before the second input: two messages, nothing left to run.
      const fork = history.find((s) => (s.values as any).messages?.length === 2 && s.next.length === 0)!;
      const { thread_id: _, ...checkpoint } = fork.checkpoint;
      const edited = (await c.runs.wait(thread.thread_id, 'chat', {
        input: userInput('second, edited'),
        checkpoint,
      })) as any;
      expect(contents(edited.messages)).toEqual(['first', 'Hello there', 'second, edited', 'Hello there']);
      const state = await c.threads.getState(thread.thread_id);
      expect(state.parent_checkpoint).not.toBeNull();
      expect(contents((state.values as any).messages)).toEqual(contents(edited.messages));
    });

    it("writes a run's metadata into its checkpoints: the history finds them by it", async () => {
      const c = client();
      const thread = await c.threads.create();
      const run = await c.runs.create(thread.thread_id, 'chat', {
        input: userInput('hi'),
        metadata: { campaign: 'spring' },
      });
      await c.runs.join(thread.thread_id, run.run_id);
      await c.runs.wait(thread.thread_id, 'chat', { input: userInput('again'), metadata: { campaign: 'summer' } });
      const spring = await c.threads.getHistory(thread.thread_id, { metadata: { campaign: 'spring' }, limit: 100 });
      expect(spring.length).toBeGreaterThan(0);
      for (const s of spring) expect(s.metadata).toMatchObject({ campaign: 'spring', run_id: run.run_id });
      const byRun = await c.threads.getHistory(thread.thread_id, { metadata: { run_id: run.run_id }, limit: 100 });
      expect(byRun.map((s) => s.checkpoint.checkpoint_id)).toEqual(spring.map((s) => s.checkpoint.checkpoint_id));
      const all = await c.threads.getHistory(thread.thread_id, { limit: 100 });
      expect(all.length).toBeGreaterThan(spring.length);
      expect(JSON.stringify(all.map((s) => s.metadata))).not.toMatch(/langgraph_auth_user|service_auth_user/);
    });

    it('rollback: the run it replaces is deleted and the thread goes back to before it', async () => {
      const c = client();
      const thread = await c.threads.create();
      await c.runs.wait(thread.thread_id, 'chat', { input: userInput('first') });
      const doomed = await c.runs.create(thread.thread_id, 'slow', { input: userInput('doomed') });
      // It has made checkpoints of its own before it is replaced.
      await eventually(async () => {
        const state = await c.threads.getState(thread.thread_id);
        return contents((state.values as any).messages).includes('started') ? true : undefined;
      });
      const replacement = (await c.runs.wait(thread.thread_id, 'chat', {
        input: userInput('second'),
        multitaskStrategy: 'rollback',
      })) as any;
      expect(contents(replacement.messages)).toEqual(['first', 'Hello there', 'second', 'Hello there']);
      await expect(c.runs.get(thread.thread_id, doomed.run_id)).rejects.toMatchObject({ status: 404 });
      expect((await c.runs.list(thread.thread_id)).map((r) => r.run_id)).not.toContain(doomed.run_id);
      expect((await c.threads.get(thread.thread_id)).status).toBe('idle');
    });

    it('cancel with action=rollback deletes the run and restores the state before it', async () => {
      const c = client();
      const thread = await c.threads.create();
      await c.runs.wait(thread.thread_id, 'chat', { input: userInput('first') });
      const before = await c.threads.getState(thread.thread_id);
      const doomed = await c.runs.create(thread.thread_id, 'slow', { input: userInput('doomed') });
      await eventually(async () => {
        const state = await c.threads.getState(thread.thread_id);
        return contents((state.values as any).messages).includes('started') ? true : undefined;
      });
      await c.runs.cancel(thread.thread_id, doomed.run_id, true, 'rollback');
      const after = await c.threads.getState(thread.thread_id);
      expect(after.values).toEqual(before.values);
      expect(after.metadata).toMatchObject({ source: 'rollback' });
      await expect(c.runs.get(thread.thread_id, doomed.run_id)).rejects.toMatchObject({ status: 404 });
      const thread2 = await c.threads.get(thread.thread_id);
      expect(thread2.status).toBe('idle');
      expect(thread2.values).toEqual(before.values);
      // The next run goes on from the restored state.
      const next = (await c.runs.wait(thread.thread_id, 'chat', { input: userInput('again') })) as any;
      expect(contents(next.messages)).toEqual(['first', 'Hello there', 'again', 'Hello there']);
    });
  });
}
