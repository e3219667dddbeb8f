import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newKey, userInput } from '../helpers.ts';
import { wireServer } from './wire-server.ts';

/** On the wire: health, authentication, the user object, and the assistants routes. */
const { json } = wireServer();

describe('health and authentication', () => {
  it('answers /ok and /info without a key', async () => {
    expect(await json('/ok', { key: null })).toMatchObject({ status: 200, body: { ok: true } });
    const info = await json('/info', { key: null });
    expect(info.status).toBe(200);
    expect(info.body).toMatchObject({
      version: expect.any(String),
      langgraph_js_version: expect.stringMatching(/^\d+\./),
      flags: { assistants: true },
    });
  });

  it.each([
    ['no key', null, /Missing X-Api-Key/],
    ['an unknown key', 'not-a-key', /Invalid API key/],
    ["a key of another organisation than the deployment's", newKey('other'), /Invalid API key/],
  ])('answers 401 with a reason to %s', async (_name, k, detail) => {
    const res = await json('/assistants/search', { body: {}, key: k });
    expect(res.status).toBe(401);
    expect(res.body.detail).toMatch(detail);
  });
});

describe('the user object', () => {
  it('is the key owner without a custom handler, the same object under both names', async () => {
    const res = await json('/runs/wait', { body: { assistant_id: 'whoami', input: userInput('who') } });
    expect(JSON.parse(res.body.messages.at(-1).content)).toEqual({
      identity: 'acme',
      team: null,
      fields: ['display_name', 'identity', 'is_authenticated', 'kind', 'org', 'permissions', 'workspace'],
      same: true,
      tokenLength: 0,
    });
  });
});

describe('assistants', () => {
  it('creates a default assistant per graph, created_by system, addressable by graph name', async () => {
    const res = await json('/assistants/search', { body: { metadata: { created_by: 'system' }, limit: 100 } });
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    expect(res.body.map((a: any) => a.graph_id).sort()).toEqual([
      'agent',
      'approval',
      'custom',
      'factory',
      'failing',
      'remember',
      'reviewed',
      'slow',
      'uncompiled',
      'whoami',
    ]);
    const byName = await json('/assistants/agent');
    const agent = res.body.find((a: any) => a.graph_id === 'agent');
    expect(byName.body).toEqual(agent);
    expect((await json(`/assistants/${agent.assistant_id}`)).body).toEqual(agent);
  });

  it('pages with limit and offset, X-Pagination-Total and X-Pagination-Next', async () => {
    const first = await json('/assistants/search', {
      body: { metadata: { created_by: 'system' }, limit: 4, offset: 0 },
    });
    expect(first.body).toHaveLength(4);
    expect(first.headers.get('x-pagination-total')).toBe('10');
    expect(first.headers.get('x-pagination-next')).toBe('4');
    const second = await json('/assistants/search', {
      body: { metadata: { created_by: 'system' }, limit: 7, offset: 4 },
    });
    expect(second.body).toHaveLength(6);
    expect(second.headers.get('x-pagination-next')).toBeNull();
    const ids = [...first.body, ...second.body].map((a: any) => a.assistant_id);
    expect(new Set(ids).size).toBe(10);
  });

  it('filters by graph_id and exact metadata', async () => {
    const tag = randomUUID();
    const created = await json('/assistants', { body: { graph_id: 'agent', metadata: { tag, n: 1 }, name: 'mine' } });
    expect(created.status).toBe(200);
    await json('/assistants', { body: { graph_id: 'slow', metadata: { tag, n: 2 } } });
    const found = await json('/assistants/search', { body: { metadata: { tag }, graph_id: 'agent' } });
    expect(found.body.map((a: any) => a.assistant_id)).toEqual([created.body.assistant_id]);
    expect((await json('/assistants/search', { body: { metadata: { tag, n: 3 } } })).body).toEqual([]);
  });

  it('answers 409 for an existing id, 404 for an unknown graph or id, 422 for a bad body', async () => {
    const id = randomUUID();
    expect((await json('/assistants', { body: { graph_id: 'agent', assistant_id: id } })).status).toBe(200);
    expect((await json('/assistants', { body: { graph_id: 'agent', assistant_id: id } })).status).toBe(409);
    expect(
      (await json('/assistants', { body: { graph_id: 'agent', assistant_id: id, if_exists: 'do_nothing' } })).status,
    ).toBe(200);
    const unknownGraph = await json('/assistants', { body: { graph_id: 'nope' } });
    expect(unknownGraph.status).toBe(404);
    expect(unknownGraph.body.detail).toMatch(/Graph "nope" not found/);
    expect((await json(`/assistants/${randomUUID()}`)).status).toBe(404);
    const bad = await json('/assistants/search', { body: { limit: 0 } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ['body', 'limit'], type: 'too_small' });
  });
});
