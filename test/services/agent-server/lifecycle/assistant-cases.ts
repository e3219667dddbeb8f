import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { newKey, sdk, userInput, type Stack } from '../helpers.ts';
import { type LifecycleContext } from './context.ts';

/** Updating, versioning and deleting assistants. */
export function assistantCases(shared: LifecycleContext): void {
  const { client } = shared;
  let stack: Stack;
  beforeAll(() => {
    stack = shared.stack;
  });
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
      const bad = await c.assistants.update(made.assistant_id, { metadata: 'nope' as never }).catch((e: unknown) => e);
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
}
