import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryAgentStore } from '../../../../src/services/agent-server/store/memory-agent-store.ts';
import type { Run } from '../../../../src/services/agent-server/store/records.ts';
import { collect, EXAMPLE_APP, startAgentServer, type RunningAgentServer } from '../helpers.ts';

/** A store that takes its time to write a run, as Redis does on a loaded machine. */
class SlowRunWrites extends MemoryAgentStore {
  override async putRun(run: Run): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 300));
    await super.putRun(run);
  }
}

/**
 * `runs.create` answered the run before its first record (pending) reached the store: a read or a join sent right
 * after the answer could meet "404 Run … not found" (a suite that failed by chance on the Redis store).
 */
describe('regression: a background run was answered before it was in the store', () => {
  let server: RunningAgentServer;
  let client: Client;
  beforeAll(async () => {
    server = await startAgentServer({ configPath: EXAMPLE_APP, store: new SlowRunWrites() });
    client = new Client({ apiUrl: server.url, defaultHeaders: { authorization: 'Bearer alice-token' } });
  });
  afterAll(() => server?.close());

  const input = { messages: [{ role: 'user', content: 'hi' }] };

  it('threadless: a join right after create follows the run', async () => {
    const run = await client.runs.create(null, 'agent', { input });
    const chunks = await collect(client.runs.joinStream(null, run.run_id));
    expect(chunks[0]).toMatchObject({ event: 'metadata', data: { run_id: run.run_id } });
  });

  it('on a thread: the run reads back right after create', async () => {
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, 'agent', { input });
    expect(await client.runs.get(thread.thread_id, run.run_id)).toMatchObject({ run_id: run.run_id });
  });
});
