import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, sdk, startStack, type Stack } from '../helpers.ts';

/**
 * Issue 27, item 1: assistant schemas as the official JS server derives them from the graph at runtime
 * (graph/parser/index.mts getRuntimeGraphSchema): a runtime context schema as config_schema/context_schema, and each
 * subgraph's schemas under the official keys (`state`, `input`, `output`, `config`), the state as its update type.
 */
const TODAY_APP = fileURLToPath(new URL('../fixtures/today-app/langgraph.json', import.meta.url));

const tone = {
  type: 'object',
  properties: {
    tone: { type: 'string', enum: ['dry', 'warm'], description: 'How to answer' },
    user_name: { type: 'string' },
  },
  required: ['tone'],
};

describe('assistant schemas as the official server gives them', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ configPath: TODAY_APP });
  });
  afterAll(async () => {
    await stack.close();
  });
  const client = () => sdk(stack.url, newKey(), { 'x-user': 'ann' }).client;

  it("gives a graph's runtime context schema as config_schema and context_schema", async () => {
    const schemas = await client().assistants.getSchemas('contextual');
    expect(schemas.config_schema).toMatchObject(tone);
    expect(schemas.context_schema).toEqual(schemas.config_schema);
    // The official server stops at the runtime schema it found (the context's): an Annotation state beside a zod
    // context schema has no state schema there (official-schemas.test.ts compares with it live).
    expect(schemas.state_schema).toBeUndefined();
  });

  it("gives each subgraph's state (as its update type), input, output and config, recursively too", async () => {
    for (const recurse of [false, true]) {
      const subgraphs = (await client().assistants.getSubgraphs('nested', { recurse })) as unknown as Record<
        string,
        Record<string, unknown>
      >;
      expect(Object.keys(subgraphs)).toEqual(['child']);
      const child = subgraphs.child!;
      expect(child.state).toMatchObject({
        type: 'object',
        properties: { note: { type: 'string', description: 'A note' }, count: { type: 'number', default: 0 } },
      });
      // The update type: nothing is required (the official server's state for a zod graph).
      expect((child.state as { required?: unknown }).required).toBeUndefined();
      expect(child.input).toMatchObject({ properties: { note: { type: 'string' } } });
      // Only the official keys (the public client's type names them `state_schema` and so on; the server does not).
      expect(Object.keys(child).sort()).toEqual(['config', 'input', 'output', 'state'].filter((k) => k in child));
      expect(child).not.toHaveProperty('state_schema');
    }
  });
});
