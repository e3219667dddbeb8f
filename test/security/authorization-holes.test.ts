import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EXAMPLE_APP,
  newKey,
  sdk,
  startAgentServer,
  userInput,
  type RunningAgentServer,
} from '../services/agent-server/helpers.ts';

/**
 * Finding: authorization holes. `POST /threads` with another user's `thread_id` and `if_exists: do_nothing` answered
 * that user's whole thread (the create handler only stamps the owner, so its filter let anything through); assistants
 * the same. The example app had no assistants handler: any user could PATCH or DELETE the shared system assistant
 * (then every user's runs failed), and an update could rewrite `metadata.owner` to plant a thread in another user's
 * list. Now an existing resource the caller may not read is answered 409 "already exists", as for a clash; system
 * assistants are read-only to users, and updates keep the owner.
 */
describe('the example app, two users', () => {
  let agent: RunningAgentServer;
  beforeAll(async () => {
    agent = await startAgentServer({ configPath: EXAMPLE_APP });
  });
  afterAll(() => agent?.close());

  const as = (token: string) => sdk(agent.url, newKey(), { authorization: `Bearer ${token}` }).client;

  it("threads.create(if_exists: do_nothing) never answers another user's thread", async () => {
    const secret = await as('alice-token').threads.create({ metadata: { note: 'secret' } });
    await expect(
      as('bob-token').threads.create({ threadId: secret.thread_id, ifExists: 'do_nothing' }),
    ).rejects.toMatchObject({ status: 409 });
    const mine = await as('alice-token').threads.create({ threadId: secret.thread_id, ifExists: 'do_nothing' });
    expect(mine.metadata).toMatchObject({ owner: 'alice', note: 'secret' });
  });

  it("assistants.create(if_exists: do_nothing) never answers another user's assistant", async () => {
    const own = await as('alice-token').assistants.create({ graphId: 'agent', metadata: { note: 'secret' } });
    expect(own.metadata).toMatchObject({ owner: 'alice' });
    await expect(
      as('bob-token').assistants.create({ graphId: 'agent', assistantId: own.assistant_id, ifExists: 'do_nothing' }),
    ).rejects.toMatchObject({ status: 409 });
    await expect(as('bob-token').assistants.update(own.assistant_id, { metadata: { x: 1 } })).rejects.toMatchObject({
      status: 404,
    });
    await expect(as('bob-token').assistants.delete(own.assistant_id)).rejects.toMatchObject({ status: 404 });
  });

  it('runs with if_not_exists: create on a thread the caller cannot see answer 404', async () => {
    const theirs = await as('alice-token').threads.create();
    await expect(
      as('bob-token').runs.wait(theirs.thread_id, 'agent', { input: userInput('hi'), ifNotExists: 'create' }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it('the system assistant is read-only to users, and everyone can still run it', async () => {
    const [system] = await as('bob-token').assistants.search({ graphId: 'agent', metadata: { created_by: 'system' } });
    expect(system).toBeDefined();
    await expect(
      as('bob-token').assistants.update(system!.assistant_id, { graphId: 'agent', config: { recursion_limit: 1 } }),
    ).rejects.toMatchObject({ status: 404 });
    await expect(as('alice-token').assistants.delete(system!.assistant_id)).rejects.toMatchObject({ status: 404 });
    const thread = await as('alice-token').threads.create();
    const out = (await as('alice-token').runs.wait(thread.thread_id, 'agent', { input: userInput('hi') })) as {
      messages: { content: string }[];
    };
    expect(out.messages[1]!.content).toBe('Hello, alice!');
  });

  it("an update cannot rewrite metadata.owner to plant a thread in another user's list", async () => {
    const alice = as('alice-token');
    const thread = await alice.threads.create();
    const updated = await alice.threads.update(thread.thread_id, { metadata: { owner: 'bob', tag: 'x' } });
    expect(updated.metadata).toMatchObject({ owner: 'alice', tag: 'x' });
    const bobs = await as('bob-token').threads.search({ limit: 100 });
    expect(bobs.map((t) => t.thread_id)).not.toContain(thread.thread_id);
    const own = await alice.assistants.create({ graphId: 'agent' });
    const moved = await alice.assistants.update(own.assistant_id, { metadata: { owner: 'bob' } });
    expect(moved.metadata).toMatchObject({ owner: 'alice' });
  });
});
