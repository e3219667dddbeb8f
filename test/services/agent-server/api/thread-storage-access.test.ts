import type { RunnableConfig } from '@langchain/core/runnables';
import { BaseCheckpointSaver, MemorySaver, type Checkpoint, type CheckpointMetadata } from '@langchain/langgraph';
import type { CheckpointListOptions, PendingWrite } from '@langchain/langgraph-checkpoint';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FIXTURE_AUTH_APP,
  newKey,
  sdk,
  startAgentServer,
  startStack,
  userInput,
  type RunningAgentServer,
  type Stack,
} from '../helpers.ts';

/**
 * Who may read a thread's storage (`GET /threads/{id}/storage`, through the edge): whoever may read the thread, as
 * `GET /threads/{id}` decides with the `threads:read` handler; another team's thread is 404. And the server answers
 * 501 when its checkpointer is not one of its own.
 */
describe('thread storage under custom auth, through the edge', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ configPath: FIXTURE_AUTH_APP });
  });
  afterAll(() => stack.close());

  const headers = (user: string, team: string) => ({ 'x-api-key': newKey(), 'x-user': user, 'x-team': team });
  const storageOf = (threadId: string, user: string, team = 'red') =>
    fetch(`${stack.url}/threads/${threadId}/storage`, { headers: headers(user, team) });

  it("answers the thread's readers and 404 to another team, as GET /threads/{id} does", async () => {
    const alice = sdk(stack.url, newKey(), { 'x-user': 'alice', 'x-team': 'red' }).client;
    const thread = await alice.threads.create();
    await alice.runs.wait(thread.thread_id, 'agent', { input: userInput('how big is this thread?') });

    const own = await storageOf(thread.thread_id, 'alice');
    expect(own.status).toBe(200);
    const body = (await own.json()) as { total_bytes: number; channel_values: { by_channel: object } };
    expect(body.total_bytes).toBeGreaterThan(0);
    expect(body.channel_values.by_channel).toHaveProperty('messages');
    // Same team: the `threads` handler's filter lets dave read it (GET /threads/{id} answers him too).
    expect((await storageOf(thread.thread_id, 'dave')).status).toBe(200);

    const outsider = await storageOf(thread.thread_id, 'mallory', 'blue');
    expect(outsider.status).toBe(404);
    expect(await outsider.json()).toEqual({ detail: `Thread ${thread.thread_id} not found` });
    const get = await fetch(`${stack.url}/threads/${thread.thread_id}`, { headers: headers('mallory', 'blue') });
    expect(get.status).toBe(404);
    expect((await storageOf(thread.thread_id, 'nobody')).status).toBe(401);
  });
});

/** A checkpointer of the embedder's own: MemorySaver behind a class this server does not know the storage of. */
class OwnSaver extends BaseCheckpointSaver {
  private readonly inner = new MemorySaver();
  getTuple(config: RunnableConfig) {
    return this.inner.getTuple(config);
  }
  list(config: RunnableConfig, options?: CheckpointListOptions) {
    return this.inner.list(config, options);
  }
  put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata) {
    return this.inner.put(config, checkpoint, metadata);
  }
  putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string) {
    return this.inner.putWrites(config, writes, taskId);
  }
  deleteThread(threadId: string) {
    return this.inner.deleteThread(threadId);
  }
}

describe('thread storage with a checkpointer of the embedder', () => {
  let agent: RunningAgentServer;
  beforeAll(async () => {
    agent = await startAgentServer({ checkpointer: new OwnSaver() });
  });
  afterAll(() => agent.close());

  it('answers 501 with a detail', async () => {
    const key = newKey();
    const thread = await sdk(agent.url, key).client.threads.create();
    const res = await fetch(`${agent.url}/threads/${thread.thread_id}/storage`, { headers: { 'x-api-key': key } });
    expect(res.status).toBe(501);
    expect(await res.json()).toEqual({ detail: expect.stringContaining('checkpointer') });
  });
});
