import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  captureLog,
  collect,
  EXAMPLE_APP,
  FIXTURE_AUTH_APP,
  newKey,
  sdk,
  startStack,
  userInput,
  type Stack,
} from '../helpers.ts';

/**
 * Custom authentication through the edge. The example app's handler
 * (bearer tokens, owner-scoped threads) with the public JS client for two
 * users who never see each other's threads; then a fixture handler for the
 * finer rules ($contains, $eq, default export, rejected and failing handlers).
 */
describe('the example app: bearer tokens and per-user threads', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ configPath: EXAMPLE_APP });
  });
  afterAll(() => stack.close());

  const as = (token: string) => sdk(stack.url, newKey(), { authorization: `Bearer ${token}` });
  const rawList = async (token: string) => {
    const res = await fetch(`${stack.url}/threads?limit=100`, {
      headers: { 'x-api-key': newKey(), authorization: `Bearer ${token}` },
    });
    return { status: res.status, ids: ((await res.json()) as { thread_id: string }[]).map((t) => t.thread_id) };
  };

  it('greets each user by identity and keeps their threads apart', async () => {
    const alice = as('alice-token');
    const bob = as('bob-token');
    const aliceThread = await alice.client.threads.create();
    const bobThread = await bob.client.threads.create();
    expect(aliceThread.metadata).toMatchObject({ owner: 'alice' });
    expect(bobThread.metadata).toMatchObject({ owner: 'bob' });

    const chunks = (await collect(
      alice.client.runs.stream(aliceThread.thread_id, 'agent', { input: userInput('hi'), streamMode: 'updates' }),
    )) as { event: string; data: any }[];
    expect(chunks.find((c) => c.event === 'updates')?.data.greet.messages[0].content).toBe('Hello, alice!');
    const bobRun = (await bob.client.runs.wait(bobThread.thread_id, 'agent', { input: userInput('hi') })) as {
      messages: { content: string }[];
    };
    expect(bobRun.messages[1]!.content).toBe('Hello, bob!');

    const aliceSees = (await alice.client.threads.search({ limit: 100 })).map((t) => t.thread_id);
    const bobSees = (await bob.client.threads.search({ limit: 100 })).map((t) => t.thread_id);
    expect(aliceSees).toContain(aliceThread.thread_id);
    expect(aliceSees).not.toContain(bobThread.thread_id);
    expect(bobSees).toEqual([bobThread.thread_id]);
    expect((await rawList('alice-token')).ids).toEqual(aliceSees);
    expect((await rawList('bob-token')).ids).toEqual([bobThread.thread_id]);

    await expect(bob.client.threads.get(aliceThread.thread_id)).rejects.toMatchObject({ status: 404 });
    await expect(bob.client.threads.getState(aliceThread.thread_id)).rejects.toMatchObject({ status: 404 });
    await expect(
      collect(bob.client.runs.stream(aliceThread.thread_id, 'agent', { input: userInput('sneaky') })),
    ).rejects.toMatchObject({ status: 404 });
    expect(
      (await alice.client.threads.getState<{ messages: unknown[] }>(aliceThread.thread_id)).values.messages,
    ).toHaveLength(3);
    await expect(bob.client.threads.getHistory(aliceThread.thread_id)).rejects.toMatchObject({ status: 404 });
    await expect(
      bob.client.threads.updateState(aliceThread.thread_id, { values: { messages: [] }, asNode: 'greet' }),
    ).rejects.toMatchObject({ status: 404 });
    await expect(collect(bob.client.threads.joinStream(aliceThread.thread_id))).rejects.toMatchObject({ status: 404 });
    // Counts see what searches see.
    expect(await alice.client.threads.count()).toBe(aliceSees.length);
    expect(await bob.client.threads.count()).toBe(1);
    expect(await bob.client.threads.count({ status: 'busy' })).toBe(0);
    // Assistants have no handler in the example: shared.
    expect((await bob.client.assistants.search({ graphId: 'agent' })).length).toBe(1);
    expect(await bob.client.assistants.count({ graphId: 'agent' })).toBe(1);
    expect(await bob.client.assistants.count({ graphId: 'no-such-graph' })).toBe(0);
  });

  it("keeps each user's crons apart: another user's cron is invisible and 404, and nobody schedules runs on another's thread", async () => {
    const alice = as('alice-token').client;
    const bob = as('bob-token').client;
    const cron = await alice.crons.create('agent', { schedule: '0 0 1 1 *', input: userInput('new year') });
    expect(cron.metadata).toMatchObject({ owner: 'alice' });
    expect((await alice.crons.search({ limit: 100 })).map((x) => x.cron_id)).toContain(cron.cron_id);
    expect((await bob.crons.search({ limit: 100 })).map((x) => x.cron_id)).not.toContain(cron.cron_id);
    expect(await bob.crons.count()).toBe(0);
    await expect(bob.crons.update(cron.cron_id, { enabled: false })).rejects.toMatchObject({ status: 404 });
    await expect(bob.crons.delete(cron.cron_id)).rejects.toMatchObject({ status: 404 });
    const aliceThread = await alice.threads.create();
    await expect(
      bob.crons.createForThread(aliceThread.thread_id, 'agent', { schedule: '* * * * *' }),
    ).rejects.toMatchObject({ status: 404 });
    await alice.crons.delete(cron.cron_id);
  });

  it("keeps each user's store items under their own identity: another user's namespace is 403", async () => {
    const alice = as('alice-token').client;
    const bob = as('bob-token').client;
    await alice.store.putItem(['alice', 'notes'], 'n1', { text: 'private' });
    expect((await alice.store.getItem(['alice', 'notes'], 'n1'))?.value).toEqual({ text: 'private' });
    expect((await alice.store.listNamespaces({ prefix: ['alice'] })).namespaces).toEqual([['alice', 'notes']]);
    await expect(bob.store.getItem(['alice', 'notes'], 'n1')).rejects.toMatchObject({ status: 403 });
    await expect(bob.store.searchItems(['alice'])).rejects.toMatchObject({ status: 403 });
    await expect(bob.store.putItem(['alice', 'notes'], 'n1', { text: 'overwritten' })).rejects.toMatchObject({
      status: 403,
    });
    await expect(bob.store.deleteItem(['alice', 'notes'], 'n1')).rejects.toMatchObject({ status: 403 });
    await expect(bob.store.listNamespaces()).rejects.toMatchObject({ status: 403 });
    expect((await alice.store.getItem(['alice', 'notes'], 'n1'))?.value).toEqual({ text: 'private' });
  });

  it("answers 404 to every update, delete and run control on another user's thread, and leaves it intact", async () => {
    const alice = as('alice-token').client;
    const bob = as('bob-token').client;
    const thread = await alice.threads.create({ metadata: { topic: 'private' } });
    await alice.runs.wait(thread.thread_id, 'agent', { input: userInput('mine') });
    const [run] = await alice.runs.list(thread.thread_id);
    const id = thread.thread_id;
    const runId = run!.run_id;
    for (const attempt of [
      () => bob.threads.update(id, { metadata: { owner: 'bob' } }),
      () => bob.threads.delete(id),
      () => bob.runs.get(id, runId),
      () => bob.runs.cancel(id, runId, true),
      () => bob.runs.join(id, runId),
      () => collect(bob.runs.joinStream(id, runId)),
      () => bob.runs.delete(id, runId),
    ]) {
      await expect(attempt()).rejects.toMatchObject({ status: 404 });
    }
    const intact = await alice.threads.get(id);
    expect(intact.metadata).toMatchObject({ owner: 'alice', topic: 'private' });
    expect((await alice.runs.get(id, runId)).status).toBe('success');
    expect((await alice.runs.join(id, runId)) as { messages: unknown[] }).toEqual(intact.values);

    // The owner may: metadata merges (the owner stays), the run record goes, then the thread.
    expect((await alice.threads.update(id, { metadata: { topic: 'renamed' } })).metadata).toMatchObject({
      owner: 'alice',
      topic: 'renamed',
    });
    await alice.runs.delete(id, runId);
    expect(await alice.runs.list(id)).toEqual([]);
    await alice.threads.delete(id);
    await expect(alice.threads.get(id)).rejects.toMatchObject({ status: 404 });
  });

  it("follows a threadless run only for its own user: another user's join answers 404", async () => {
    const alice = as('alice-token').client;
    const bob = as('bob-token').client;
    let runId = '';
    const own = (await collect(
      alice.runs.stream(null, 'agent', {
        input: userInput('just once'),
        streamResumable: true,
        onRunCreated: (m) => (runId = m.run_id),
      }),
    )) as {
      id?: string;
    }[];
    expect(own.length).toBeGreaterThan(2);
    expect(await collect(alice.runs.joinStream(null, runId, { lastEventId: '0' }))).toEqual(own);
    await expect(collect(bob.runs.joinStream(null, runId, { lastEventId: '0' }))).rejects.toMatchObject({
      status: 404,
    });
    await expect(collect(alice.runs.joinStream(null, randomUUID()))).rejects.toMatchObject({ status: 404 });
  });

  it('answers 401 with the handler’s detail; the edge still adds its rate-limit headers', async () => {
    const none = sdk(stack.url, newKey());
    const err = await none.client.threads.search().catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 401 });
    expect((err as Error).message).toContain('Missing bearer token: send Authorization: Bearer <token>.');
    expect(none.seen[0]?.headers.get('ratelimit')).toMatch(/"default\.api-key";r=\d+/);
    const wrong = await as('mallory-token')
      .client.assistants.search()
      .catch((e: unknown) => e);
    expect(wrong).toMatchObject({ status: 401 });
    expect((wrong as Error).message).toContain('Invalid bearer token.');
  });

  it('serves /ok, /info and /docs without the handler', async () => {
    for (const path of ['/ok', '/info', '/docs', '/openapi.json'])
      expect((await fetch(`${stack.url}${path}`)).status).toBe(200);
  });

  it('lets the design studio (x-auth-scheme: langsmith and a valid API key) see every thread: empty filter', async () => {
    const alice = as('alice-token');
    const thread = await alice.client.threads.create();
    const studio = sdk(stack.url, newKey(), { 'x-auth-scheme': 'langsmith' });
    expect((await studio.client.threads.get(thread.thread_id)).metadata).toMatchObject({ owner: 'alice' });
    const own = await studio.client.threads.create();
    expect(own.metadata).toMatchObject({ owner: 'langgraph-studio-user' });
    const forged = sdk(stack.url, `not-a-key-${randomUUID()}`, { 'x-auth-scheme': 'langsmith' });
    await expect(forged.client.threads.get(thread.thread_id)).rejects.toMatchObject({ status: 401 });
  });
});

describe('authorization filters and handler failures', () => {
  let stack: Stack;
  const logs = captureLog();
  beforeAll(async () => {
    stack = await startStack({ configPath: FIXTURE_AUTH_APP, log: logs.log });
  });
  afterAll(() => stack.close());

  const as = (user: string, team = 'red') => sdk(stack.url, newKey(), { 'x-user': user, 'x-team': team }).client;
  const raw = (user: string, path = '/assistants/search') =>
    fetch(`${stack.url}${path}`, {
      method: 'POST',
      headers: { 'x-api-key': newKey(), 'x-user': user, 'content-type': 'application/json' },
      body: '{}',
    });

  it('lets the user who started a threadless run follow it even when no filter matches its metadata', async () => {
    // The fixture's `threads` handler filters by team but writes nothing on create_run: the run's metadata has no team.
    let runId = '';
    const own = await collect(
      as('erin').runs.stream(null, 'agent', {
        input: userInput('mine alone'),
        streamResumable: true,
        onRunCreated: (m) => (runId = m.run_id),
      }),
    );
    expect(await collect(as('erin').runs.joinStream(null, runId, { lastEventId: '0' }))).toEqual(own);
    await expect(collect(as('frank').runs.joinStream(null, runId, { lastEventId: '0' }))).rejects.toMatchObject({
      status: 404,
    });
  });

  it('filters searches with $contains and single reads with $eq', async () => {
    const carol = as('carol');
    const thread = await carol.threads.create({ metadata: { topic: 'filters' } });
    expect(thread.metadata).toEqual({ topic: 'filters', members: ['carol'], team: 'red' });
    expect((await carol.threads.search({ metadata: { topic: 'filters' } })).map((t) => t.thread_id)).toContain(
      thread.thread_id,
    );
    // dave: same team (read allowed), not a member (search leaves it out).
    const dave = as('dave');
    expect((await dave.threads.get(thread.thread_id)).thread_id).toBe(thread.thread_id);
    expect((await dave.threads.search({ metadata: { topic: 'filters' } })).map((t) => t.thread_id)).not.toContain(
      thread.thread_id,
    );
    // erin: other team: the single read is 404.
    await expect(as('erin', 'blue').threads.get(thread.thread_id)).rejects.toMatchObject({ status: 404 });
  });

  it('applies assistant handlers: create writes metadata, read filters, search falls back to *:search', async () => {
    const made = await as('carol').assistants.create({ graphId: 'agent', metadata: { mark: 'm1' } });
    expect(made.metadata).toEqual({ mark: 'm1', team: 'red' });
    expect((await as('dave').assistants.get(made.assistant_id)).assistant_id).toBe(made.assistant_id);
    await expect(as('erin', 'blue').assistants.get(made.assistant_id)).rejects.toMatchObject({ status: 404 });
    expect(
      (await as('erin', 'blue').assistants.search({ metadata: { mark: 'm1' } })).map((a) => a.assistant_id),
    ).toEqual([made.assistant_id]);
  });

  it('applies assistant update and delete handlers: another team gets 404, a handler returning false 403', async () => {
    const made = await as('carol').assistants.create({ graphId: 'agent', metadata: { mark: 'm2' } });
    await expect(as('erin', 'blue').assistants.update(made.assistant_id, { name: 'taken' })).rejects.toMatchObject({
      status: 404,
    });
    const updated = await as('dave').assistants.update(made.assistant_id, {
      name: 'renamed',
      metadata: { mark: 'm3' },
    });
    expect(updated).toMatchObject({
      name: 'renamed',
      metadata: { mark: 'm3', team: 'red', updated_by: 'dave' },
      version: 2,
    });
    const denied = await as('carol')
      .assistants.delete(made.assistant_id)
      .catch((e: unknown) => e);
    expect(denied).toMatchObject({ status: 403 });
    expect((denied as Error).message).toContain('Not allowed to delete assistants');
    expect((await as('carol').assistants.get(made.assistant_id)).version).toBe(2);
  });

  it('applies the threads handler to update and delete: another team gets 404', async () => {
    const thread = await as('carol').threads.create({ metadata: { topic: 'kept' } });
    await expect(
      as('erin', 'blue').threads.update(thread.thread_id, { metadata: { topic: 'x' } }),
    ).rejects.toMatchObject({ status: 404 });
    await expect(as('erin', 'blue').threads.delete(thread.thread_id)).rejects.toMatchObject({ status: 404 });
    expect(
      (await as('dave').threads.update(thread.thread_id, { metadata: { topic: 'changed' } })).metadata,
    ).toMatchObject({ topic: 'changed', team: 'red' });
    await as('dave').threads.delete(thread.thread_id);
    await expect(as('carol').threads.get(thread.thread_id)).rejects.toMatchObject({ status: 404 });
  });

  it('puts the whole user object in the run config, and never in storage', async () => {
    const carol = as('carol');
    const thread = await carol.threads.create();
    const result = (await carol.runs.wait(thread.thread_id, 'whoami', { input: userInput('who am i') })) as {
      messages: { content: string }[];
    };
    expect(JSON.parse(result.messages.at(-1)!.content)).toEqual({
      identity: 'carol',
      team: 'red',
      fields: ['display_name', 'identity', 'is_authenticated', 'permissions', 'secret_token', 'team'],
      same: true,
      tokenLength: 'tok-carol'.length,
    });
    const stored = JSON.stringify([
      await carol.threads.get(thread.thread_id),
      await carol.threads.getState(thread.thread_id),
      await carol.runs.list(thread.thread_id),
    ]);
    expect(stored).toContain('who am i');
    expect(stored).not.toContain('tok-carol');
    expect(stored).not.toContain('service_auth_user');
  });

  it('answers an HTTPException with its status, detail and headers', async () => {
    const res = await raw('nobody');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('X-User');
    expect(await res.json()).toEqual({ detail: 'No entry for nobody.' });
  });

  it('answers 500 without details when the handler throws or returns no identity', async () => {
    const crash = await raw('crash');
    expect(crash.status).toBe(500);
    const text = await crash.text();
    expect(text).toBe(JSON.stringify({ detail: 'Authentication handler failed.' }));
    expect(text).not.toContain('hunter2');
    expect(logs.text()).toMatch(/custom authentication handler failed/);
    expect(logs.text()).not.toContain('hunter2');
    expect(logs.text()).not.toContain('tok-');
    const empty = await raw('void');
    expect(empty.status).toBe(500);
    expect(await empty.json()).toEqual({ detail: 'Authentication handler returned no identity.' });
  });
});
