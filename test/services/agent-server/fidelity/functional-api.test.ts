import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, newKey, sdk, startStack, type Stack } from '../helpers.ts';

/**
 * LangGraph's functional API (`entrypoint`, `task`) through the edge with the public client: an entrypoint's input is
 * whatever JSON value it takes (a string, a number), not only a state object, as on the official server. (The client's
 * types say an object, hence the casts; what it sends is the value as given.)
 */
const FUNCTIONAL_APP = fileURLToPath(new URL('../fixtures/functional-app/langgraph.json', import.meta.url));

describe('functional-API apps', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ configPath: FUNCTIONAL_APP });
  });
  afterAll(() => stack.close());

  it('runs entrypoints whose input is a string or a number, waited for and streamed', async () => {
    const { client } = sdk(stack.url, newKey());
    expect(await client.runs.wait(null, 'shout', { input: 'hello' as never })).toEqual({ text: 'HELLO!' });
    expect(await client.runs.wait(null, 'double', { input: 21 as never })).toEqual({ n: 42 });
    const chunks = (await collect(
      client.runs.stream(null, 'shout', { input: 'hey' as never, streamMode: 'updates' }),
    )) as { event: string; data: unknown }[];
    expect(chunks.filter((c) => c.event === 'updates').map((c) => c.data)).toEqual([
      { upper: 'HEY' },
      { shout: { text: 'HEY!' } },
    ]);
  });

  it('keeps a thread of an entrypoint, its state the last value returned', async () => {
    const { client } = sdk(stack.url, newKey());
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, 'shout', { input: 'one' as never });
    expect((await client.threads.getState(thread.thread_id)).values).toEqual({ text: 'ONE!' });
  });
});
