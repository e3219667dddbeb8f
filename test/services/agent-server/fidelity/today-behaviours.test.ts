import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, newKey, sdk, startStack, userInput, type Stack } from '../helpers.ts';

/**
 * Issue 27, item 1: behaviours that differed from the official server, through the edge with the unmodified client
 * (fixtures/today-app: an owner filter on threads, a store handler that refuses `forbidden/*` and filters the rest by
 * the caller's name in the namespace).
 */
const TODAY_APP = fileURLToPath(new URL('../fixtures/today-app/langgraph.json', import.meta.url));

describe('behaviours as the official server has them today', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ configPath: TODAY_APP });
  });
  afterAll(async () => {
    await stack.close();
  });
  const as = (user: string) => sdk(stack.url, newKey(), { 'x-user': user }).client;

  it('binds a thread to its graph when the run is created, so a state update meanwhile finds the graph', async () => {
    const ann = as('ann');
    const thread = await ann.threads.create();
    const run = await ann.runs.create(thread.thread_id, 'slow', { input: userInput('hi'), afterSeconds: 30 });
    expect((await ann.threads.get(thread.thread_id)).metadata).toMatchObject({ graph_id: 'slow' });
    // The official server answers "busy" while a run is pending or running (never "no graph").
    const err = await ann.threads.updateState(thread.thread_id, { values: {} }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 409 });
    expect(String((err as Error).message)).not.toContain('no graph');
    await ann.runs.cancel(thread.thread_id, run.run_id, true);
    await ann.threads.updateState(thread.thread_id, { values: { messages: [{ role: 'user', content: 'x' }] } });
  });

  it('lists no namespace whose items were all deleted', async () => {
    const ann = as('ann');
    await ann.store.putItem(['ann', 'gone'], 'k', { v: 1 });
    await ann.store.putItem(['ann', 'kept'], 'k', { v: 1 });
    await ann.store.deleteItem(['ann', 'gone'], 'k');
    const { namespaces } = await ann.store.listNamespaces({ prefix: ['ann'] });
    expect(namespaces).toEqual([['ann', 'kept']]);
  });

  it("answers the store handler's 403 on get, put, delete, search and list", async () => {
    const ann = as('ann');
    for (const attempt of [
      () => ann.store.getItem(['forbidden', 'x'], 'k'),
      () => ann.store.putItem(['forbidden', 'x'], 'k', { v: 1 }),
      () => ann.store.deleteItem(['forbidden', 'x'], 'k'),
      () => ann.store.searchItems(['forbidden']),
      () => ann.store.listNamespaces({ prefix: ['forbidden'] }),
    ]) {
      await expect(attempt()).rejects.toMatchObject({ status: 403 });
    }
  });

  it("applies the store handler's filter: others' items are hidden, unprefixed search and listing filtered", async () => {
    const bob = as('bob');
    const cat = as('cat');
    await bob.store.putItem(['bob', 'notes'], 'a', { text: 'bob only' });
    await cat.store.putItem(['cat', 'notes'], 'a', { text: 'cat only' });
    // Not under her name: refused before it is written, as the official server does.
    await expect(cat.store.putItem(['shared'], 'a', { v: 1 })).rejects.toMatchObject({ status: 403 });
    // Bob's item, seen by cat: 404 on read, overwrite and delete.
    await expect(cat.store.getItem(['bob', 'notes'], 'a')).rejects.toMatchObject({ status: 404 });
    await expect(cat.store.putItem(['bob', 'notes'], 'a', { text: 'cat', cat: 1 })).rejects.toMatchObject({
      status: 404,
    });
    await expect(cat.store.deleteItem(['bob', 'notes'], 'a')).rejects.toMatchObject({ status: 404 });
    expect((await bob.store.getItem(['bob', 'notes'], 'a'))?.value).toEqual({ text: 'bob only' });
    const searched = await cat.store.searchItems([], { limit: 100 });
    expect(searched.items.map((i) => i.namespace[0])).toEqual(['cat']);
    const { namespaces } = await cat.store.listNamespaces({});
    expect(namespaces.every((ns) => ns.includes('cat'))).toBe(true);
    expect(namespaces).toContainEqual(['cat', 'notes']);
  });

  it('opens a joined stream of a run the caller cannot see and sends one error event saying 404', async () => {
    const ann = as('ann');
    const thread = await ann.threads.create();
    const run = await ann.runs.create(thread.thread_id, 'slow', { input: userInput('hi') });
    const chunks = await collect(as('bob').runs.joinStream(thread.thread_id, run.run_id));
    expect(chunks).toHaveLength(1);
    expect(chunks[0]!.event).toBe('error');
    expect(JSON.stringify(chunks[0]!.data)).toContain('404');
    await ann.runs.join(thread.thread_id, run.run_id);
  });

  it('answers 409 to a copy of a thread the caller cannot see', async () => {
    const thread = await as('ann').threads.create();
    await expect(as('bob').threads.copy(thread.thread_id)).rejects.toMatchObject({ status: 409 });
    expect((await as('ann').threads.copy(thread.thread_id)).metadata).toMatchObject({ owner: 'ann' });
  });
});
