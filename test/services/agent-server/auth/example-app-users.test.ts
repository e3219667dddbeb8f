import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, EXAMPLE_APP, newKey, sdk, startStack, userInput, type Stack } from '../helpers.ts';

/**
 * Custom authentication through the edge: the example app's handler
 * (bearer tokens, owner-scoped threads) with the public JS client for two
 * users who never see each other's threads, crons or store items.
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
      () => bob.runs.delete(id, runId),
    ]) {
      await expect(attempt()).rejects.toMatchObject({ status: 404 });
    }
    // A joined stream opens and says 404 in one error event, as the official servers do.
    expect(await collect(bob.runs.joinStream(id, runId))).toMatchObject([
      { event: 'error', data: { message: expect.stringContaining('404') } },
    ]);
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

  it("follows a threadless run only for its own user: another user's join says 404", async () => {
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
    expect(await collect(alice.runs.joinStream(null, runId, { lastEventId: '-1' }))).toEqual(own);
    // The stream opens and says 404 in one error event, as the official servers do.
    const says404 = [{ event: 'error', data: { message: expect.stringContaining('404') } }];
    expect(await collect(bob.runs.joinStream(null, runId, { lastEventId: '-1' }))).toMatchObject(says404);
    expect(await collect(alice.runs.joinStream(null, randomUUID()))).toMatchObject(says404);
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
