import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureLog, collect, eventually, newKey, sdk, startStack, userInput, type Stack } from '../helpers.ts';

/**
 * The fidelity fixture app (fixtures/fidelity-app) through the edge, with the unmodified public client: what reaches a
 * graph, authorization handlers that refuse or fail, the SDK logger, schemas and subgraphs, custom routes, delayed
 * runs, supersteps, a factory graph's state updates and /info.
 */
const FIDELITY_APP = fileURLToPath(new URL('../fixtures/fidelity-app/langgraph.json', import.meta.url));

describe('apps load and run as on the official server', () => {
  let stack: Stack;
  const logs = captureLog();
  beforeAll(async () => {
    // The server's own environment wins over the app's env block.
    process.env.FIDELITY_PRESET = 'from the server';
    // Reading an Annotation graph's schemas from its source may take long on a loaded machine: no time limit that bites.
    process.env.LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS = '600000';
    stack = await startStack({ configPath: FIDELITY_APP, log: logs.log });
  });
  afterAll(async () => {
    await stack.close();
    delete process.env.FIDELITY_PRESET;
    delete process.env.LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS;
  });

  const as = (user: string, headers: Record<string, string> = {}) =>
    sdk(stack.url, newKey(), { 'x-user': user, ...headers }).client;
  const lastMessage = (values: unknown) => {
    const messages = (values as { messages: { content: string }[] }).messages;
    return JSON.parse(messages.at(-1)!.content) as Record<string, unknown>;
  };

  it('answers an authorization handler HTTPException with its status and message, at once', async () => {
    const started = Date.now();
    const err = await as('ann')
      .threads.create({ metadata: { secret: true } })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 403 });
    expect(String((err as Error).message)).toContain('Secret threads are not for ann.');
    // A 403 is not retried by the client (a 500 would be, for about 10 s).
    expect(Date.now() - started).toBeLessThan(5000);
    expect((await as('ann').threads.create({ metadata: { open: true } })).metadata).toEqual({ open: true });
  });

  it('answers a failing authorization handler with a JSON 500 naming it, and logs it with its name', async () => {
    const res = await fetch(`${stack.url}/assistants`, {
      method: 'POST',
      headers: { 'x-api-key': newKey(), 'x-user': 'ann', 'content-type': 'application/json' },
      body: JSON.stringify({ graph_id: 'inputs', name: 'crash' }),
    });
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ detail: 'The authorization handler "assistants:create" failed.' });
    const line = await eventually(async () =>
      logs
        .text()
        .split('\n')
        .find((l) => l.includes('authorization handler failed')),
    );
    expect(JSON.parse(line)).toMatchObject({ handler: 'assistants:create', error: { type: 'TypeError' } });
  });

  it('copies x-* and user-agent headers into configurable, never credentials, and honours configurable_headers', async () => {
    const client = as('ann', {
      'x-tenant-hint': 'blue',
      'x-service-key': 'sk-secret',
      'user-agent': 'fidelity-test/1',
    });
    const values = await client.runs.wait(null, 'inputs', { input: userInput('hi') });
    const seen = lastMessage(values);
    expect(seen.headers).toMatchObject({ 'x-tenant-hint': 'blue', 'x-user': 'ann', 'user-agent': 'fidelity-test/1' });
    const names = Object.keys(seen.headers as object);
    for (const secret of ['x-api-key', 'x-service-key', 'authorization']) expect(names).not.toContain(secret);
    // http.configurable_headers.exclude of the fixture: the edge's forwarding headers stay out.
    expect(names.filter((n) => n.startsWith('x-forwarded-') || n === 'x-request-id')).toEqual([]);
  });

  it('applies the env block (without overriding the server environment) and per-graph configuration', async () => {
    const client = as('ann');
    const seen = lastMessage(await client.runs.wait(null, 'inputs', { input: userInput('hi') }));
    expect(seen).toMatchObject({ env: 'hello from the env block', envKept: 'from the server', flavour: 'vanilla' });
    const assistant = await client.assistants.get('inputs');
    expect(assistant).toMatchObject({
      config: { configurable: { flavour: 'vanilla' } },
      context: { tone: 'dry' },
      description: 'Says what reached it',
    });
  });

  it('gives the run its runtime context (the assistant context merged with the run context)', async () => {
    const seen = lastMessage(
      await as('ann').runs.wait(null, 'inputs', { input: userInput('hi'), context: { mood: 'curious' } }),
    );
    expect(seen.context).toEqual({ tone: 'dry', mood: 'curious' });
  });

  it("passes the run's config on to the graph: tags, metadata, concurrency, and the run's name", async () => {
    const config = {
      tags: ['nightly'],
      metadata: { source: 'batch', ticket: 'ignored' },
      run_name: 'nightly-report',
      max_concurrency: 2,
    };
    const client = as('ann');
    const seen = lastMessage(
      await client.runs.wait(null, 'inputs', {
        input: userInput('hi'),
        metadata: { ticket: 'T-1' },
        config,
      }),
    );
    expect(seen.maxConcurrency).toBe(2);
    expect(seen.tags).toContain('nightly');
    // The run's metadata wins over the config's; the run's ids over both.
    expect(seen.metadata).toMatchObject({ source: 'batch', ticket: 'T-1', graph_id: 'inputs' });
    // The name is the whole run's (a node sees its own): it names the first event.
    const events = (await collect(
      client.runs.stream(null, 'inputs', { input: userInput('hi'), streamMode: 'events', config }),
    )) as { event: string; data: { event?: string; name?: string } }[];
    expect(events.find((e) => e.event === 'events')?.data).toMatchObject({
      event: 'on_chain_start',
      name: 'nightly-report',
    });
  });

  it('registers the SDK logger before the app loads, and writes what graphs log to the server log', async () => {
    await as('ann').runs.wait(null, 'inputs', { input: userInput('log me') });
    const line = await eventually(async () =>
      logs
        .text()
        .split('\n')
        .find((l) => l.includes('reporting inputs')),
    );
    expect(JSON.parse(line)).toMatchObject({ source: 'app', langgraph_node: 'report', level: 30 });
  });

  // An Annotation state's schemas are read from its source: seconds, more on a loaded machine.
  it('serves the JSON schemas of a zod state graph exactly, and its subgraphs', { timeout: 600_000 }, async () => {
    const client = as('ann');
    const schemas = await client.assistants.getSchemas('writer');
    expect(schemas.graph_id).toBe('writer');
    expect(schemas.state_schema).toMatchObject({
      type: 'object',
      properties: {
        topic: { type: 'string', description: 'What to write about' },
        words: { type: 'number', default: 0, description: 'Words written so far' },
      },
    });
    expect(schemas.input_schema).toMatchObject({ type: 'object', properties: { topic: { type: 'string' } } });
    expect(schemas.output_schema).toMatchObject({ properties: { words: { type: 'number' } } });
    // An Annotation state: read from the TypeScript source, as the official server does (official-schemas.test.ts).
    expect((await client.assistants.getSchemas('inputs')).state_schema).toMatchObject({
      type: 'object',
      properties: { messages: { type: 'array' } },
    });

    const subgraphs = (await client.assistants.getSubgraphs('writer')) as unknown as Record<string, { state: unknown }>;
    expect(Object.keys(subgraphs)).toEqual(['count_words']);
    expect(subgraphs.count_words!.state).toMatchObject({ properties: { topic: { type: 'string' } } });
    expect(await client.assistants.getSubgraphs('writer', { namespace: 'count_words', recurse: true })).toHaveProperty(
      'count_words',
    );
    expect(await client.assistants.getSubgraphs('inputs', { recurse: true })).toEqual({});
  });

  it('mounts http.app before the API, behind the same authentication', async () => {
    const ok = await fetch(`${stack.url}/custom/hello`, { headers: { 'x-api-key': newKey(), 'x-user': 'ann' } });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ hello: 'ann' });
    const anonymous = await fetch(`${stack.url}/custom/hello`, { headers: { 'x-api-key': newKey() } });
    expect(anonymous.status).toBe(401);
    // Its middleware runs before the API routes too; the public paths stay public.
    const search = await fetch(`${stack.url}/assistants/search`, {
      method: 'POST',
      headers: { 'x-api-key': newKey(), 'x-user': 'ann', 'content-type': 'application/json' },
      body: '{}',
    });
    expect(search.status).toBe(200);
    expect(search.headers.get('x-custom-middleware')).toBe('seen');
    expect((await fetch(`${stack.url}/ok`)).status).toBe(200);
    expect((await fetch(`${stack.url}/info`)).status).toBe(200);
  });

  it('says in /info that crons are served', async () => {
    const info = (await (await fetch(`${stack.url}/info`)).json()) as { flags: Record<string, boolean> };
    expect(info.flags).toMatchObject({ assistants: true, crons: true });
  });

  it('schedules a run with after_seconds: pending until its time, then run; cancellable while it waits', async () => {
    const client = as('ann');
    const thread = await client.threads.create();
    const started = Date.now();
    const run = await client.runs.create(thread.thread_id, 'pause', { input: userInput('later'), afterSeconds: 1 });
    expect(run.status).toBe('pending');
    expect((await client.runs.list(thread.thread_id, { status: 'pending' })).map((r) => r.run_id)).toEqual([
      run.run_id,
    ]);
    await client.runs.join(thread.thread_id, run.run_id);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect((await client.runs.get(thread.thread_id, run.run_id)).status).toBe('success');

    const other = await client.threads.create();
    const delayed = await client.runs.create(other.thread_id, 'pause', { input: userInput('never'), afterSeconds: 60 });
    await client.runs.cancel(other.thread_id, delayed.run_id, true);
    expect((await client.runs.get(other.thread_id, delayed.run_id)).status).toBe('interrupted');
    expect((await client.threads.getState(other.thread_id)).values).toEqual({});
  });

  it('creates a thread from supersteps', async () => {
    const client = as('ann');
    const thread = await client.threads.create({
      graphId: 'writer',
      supersteps: [
        { updates: [{ values: { topic: 'a b c' }, asNode: '__start__' }] },
        { updates: [{ values: { words: 3 }, asNode: 'count_words' }] },
      ],
    });
    expect(thread.values).toEqual({ topic: 'a b c', words: 3 });
    const state = await client.threads.getState(thread.thread_id);
    expect(state.values).toEqual({ topic: 'a b c', words: 3 });
    expect(state.next).toEqual(['finish']);
    await expect(
      client.threads.create({ graphId: 'writer', supersteps: [{ updates: [{ values: {}, asNode: 'nowhere' }] }] }),
    ).rejects.toMatchObject({ status: 422 });
  });

  it("rebuilds a factory graph with the thread's config to update its state as a node of that run", async () => {
    const client = as('ann');
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, 'variants', {
      input: userInput('go'),
      config: { configurable: { variant: 'b' } },
    });
    // The thread keeps the run's configurable, without the user object and the request headers.
    const kept = ((await client.threads.get(thread.thread_id)).config as { configurable: Record<string, unknown> })
      .configurable;
    expect(kept).toMatchObject({ variant: 'b', graph_id: 'variants' });
    for (const key of ['service_auth_user', 'langgraph_auth_user', 'x-user', 'x-api-key', 'user-agent'])
      expect(kept).not.toHaveProperty([key]);
    const written = await client.threads.updateState(thread.thread_id, {
      values: { messages: [{ role: 'ai', content: 'edited' }] },
      asNode: 'step_b',
    });
    expect((written as { checkpoint?: unknown }).checkpoint).toHaveProperty('checkpoint_id');
    const state = await client.threads.getState<{ messages: { content: string }[] }>(thread.thread_id);
    expect(state.values.messages.at(-1)!.content).toBe('edited');
  });
});
