import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, sdk, startStack, userInput, type Stack } from '../helpers.ts';

/**
 * The long-term memory store (`client.store`) with the unmodified public client, through the edge; and a graph that
 * uses it.
 */
describe('store through the SDK', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.close());

  it('puts, gets, searches, lists and deletes items', async () => {
    const c = sdk(stack.url, newKey()).client;
    const ns = ['notes', crypto.randomUUID()];
    expect(await c.store.getItem(ns, 'missing')).toBeNull();
    await c.store.putItem(ns, 'a', { text: 'first', n: 1 });
    await c.store.putItem(ns, 'b', { text: 'second', n: 2 });
    await c.store.putItem([...ns, 'deeper'], 'c', { text: 'third', n: 3 });

    const a = await c.store.getItem(ns, 'a');
    expect(a).toMatchObject({
      namespace: ns,
      key: 'a',
      value: { text: 'first', n: 1 },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(Date.parse(a!.createdAt)).not.toBeNaN();

    const all = await c.store.searchItems(ns);
    expect(all.items.map((i) => i.key)).toEqual(['a', 'b', 'c']);
    expect((await c.store.searchItems(ns, { filter: { n: { $gte: 2 } } })).items.map((i) => i.key)).toEqual(['b', 'c']);
    expect((await c.store.searchItems(ns, { limit: 1, offset: 1 })).items.map((i) => i.key)).toEqual(['b']);
    expect((await c.store.listNamespaces({ prefix: ns })).namespaces).toEqual([ns, [...ns, 'deeper']]);
    expect((await c.store.listNamespaces({ prefix: ns, maxDepth: 2 })).namespaces).toEqual([ns]);

    await c.store.deleteItem(ns, 'a');
    expect(await c.store.getItem(ns, 'a')).toBeNull();
    expect((await c.store.searchItems(ns)).items.map((i) => i.key)).toEqual(['b', 'c']);
  });

  it('answers 422 for a namespace the store refuses, an empty one, or a ttl that is not a positive number of minutes', async () => {
    const c = sdk(stack.url, newKey()).client;
    await expect(c.store.putItem(['a:b'], 'k', { v: 1 })).rejects.toMatchObject({
      status: 422,
      message: expect.stringContaining('colons'),
    });
    await expect(c.store.putItem([], 'k', { v: 1 })).rejects.toMatchObject({
      status: 422,
      message: expect.stringContaining('namespace'),
    });
    await expect(c.store.putItem(['ok'], 'k', { v: 1 }, { ttl: 0 })).rejects.toMatchObject({
      status: 422,
      message: expect.stringContaining('ttl'),
    });
  });

  it('is what graphs reach as config.store: shared by every thread of the user', async () => {
    const key = newKey();
    const c = sdk(stack.url, key).client;
    const first = (await c.runs.wait(null, 'remember', { input: userInput('apples') })) as {
      messages: { content: string }[];
    };
    expect(first.messages.at(-1)!.content).toBe('I remember 0 earlier: ');
    const thread = await c.threads.create();
    const second = (await c.runs.wait(thread.thread_id, 'remember', { input: userInput('pears') })) as {
      messages: { content: string }[];
    };
    expect(second.messages.at(-1)!.content).toBe('I remember 1 earlier: apples');
    const namespaces = (await c.store.listNamespaces({ prefix: ['memories'] })).namespaces;
    const mine = namespaces.find((ns) => ns.length === 2);
    expect(mine).toBeDefined();
    expect((await c.store.searchItems(mine!)).items.map((i) => i.value.said)).toEqual(['apples', 'pears']);
  });
});
