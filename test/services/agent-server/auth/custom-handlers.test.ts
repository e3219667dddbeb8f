import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureLog, collect, FIXTURE_AUTH_APP, newKey, sdk, startStack, userInput, type Stack } from '../helpers.ts';

/**
 * Custom authentication through the edge: a fixture handler for the finer
 * rules ($contains, $eq, default export, rejected and failing handlers).
 */
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
    expect(await collect(as('erin').runs.joinStream(null, runId, { lastEventId: '-1' }))).toEqual(own);
    // As the official servers: the stream opens and says 404 in one error event.
    const hidden = await collect(as('frank').runs.joinStream(null, runId, { lastEventId: '-1' }));
    expect(hidden).toMatchObject([{ event: 'error', data: { message: expect.stringContaining('404') } }]);
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
