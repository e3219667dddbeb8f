import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_APP, newKey, sdk, startStack, type Stack } from '../helpers.ts';

/**
 * The patterns the example app shows for users to copy, through the edge with the public client: a zod state graph
 * whose schemas are exact, an authorization handler that refuses with HTTPException(403), a custom route.
 */
describe('the example app: zod schemas, a 403 with its reason, a custom route', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ configPath: EXAMPLE_APP });
  });
  afterAll(() => stack.close());

  const as = (token: string) => sdk(stack.url, newKey(), { authorization: `Bearer ${token}` }).client;

  it('serves the schemas of the zod-typed drafts graph exactly, and runs it', async () => {
    const alice = as('alice-token');
    const schemas = await alice.assistants.getSchemas('drafts');
    expect(schemas.state_schema).toMatchObject({
      type: 'object',
      properties: {
        topic: { type: 'string', description: 'What the draft is about' },
        draft: { type: 'string', default: '', description: 'The text written so far' },
        words: { type: 'integer', default: 0 },
      },
    });
    // As the official JS server: a zod graph's state schema is its update type, nothing required.
    expect((schemas.state_schema as { required?: unknown }).required).toBeUndefined();
    expect((await alice.assistants.get('drafts')).description).toBe(
      'Writes a short note about a topic; its state is a zod schema',
    );
    const thread = await alice.threads.create();
    const values = await alice.runs.wait(thread.thread_id, 'drafts', { input: { topic: 'otters' } });
    expect(values).toEqual({ topic: 'otters', draft: 'A short note about otters.', words: 5 });
  });

  it('refuses another user’s store namespace with the handler’s 403 and reason', async () => {
    const err = await as('bob-token')
      .store.getItem(['alice', 'notes'], 'n1')
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 403 });
    expect((err as Error).message).toContain('Store items of bob live under namespaces starting with');
  });

  it('serves the custom route /me behind the same bearer-token authentication', async () => {
    const me = await fetch(`${stack.url}/me`, {
      headers: { 'x-api-key': newKey(), authorization: 'Bearer alice-token' },
    });
    expect(me.status).toBe(200);
    expect(await me.json()).toEqual({
      identity: 'alice',
      display_name: 'Alice',
      permissions: ['threads:write', 'threads:read', 'admin'],
    });
    const anonymous = await fetch(`${stack.url}/me`, { headers: { 'x-api-key': newKey() } });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ detail: 'Missing bearer token: send Authorization: Bearer <token>.' });
  });
});
