import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAgentStorage, type AgentStorage } from '../../../src/services/agent-server/store/open-storage.ts';
import { ownDatabase, type OwnDatabase } from '../../helpers/shared-postgres.ts';
import { registry } from './fixtures/app/graphs.ts';
import { collect, eventually, newKey, sdk, startAgentServer, userInput, type RunningAgentServer } from './helpers.ts';

/**
 * Two Agent Servers on one PostgreSQL database (replicas of a deployment): a run on one is read, waited for and
 * cancelled from the other (through the store: run leases and cancel claims in `agent_leases`). A database of this
 * file's own on the shared server.
 */
let db: OwnDatabase;
let a: RunningAgentServer;
let b: RunningAgentServer;
const log = pino({ level: 'silent' });
const open = (): Promise<AgentStorage> =>
  openAgentStorage({ database: { uri: db.uri, poolSize: 3 }, redis: null, redisPrefix: 'x', log });
const waitFor = (check: () => boolean) => eventually(async () => (check() ? true : undefined), 8000);

beforeAll(async () => {
  db = await ownDatabase();
  const [sa, sb] = await Promise.all([open(), open()]);
  [a, b] = await Promise.all([startAgentServer({ ...sa, log }), startAgentServer({ ...sb, log })]);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await db?.drop();
});

describe('two servers on one PostgreSQL', () => {
  it('one reads, waits for and cancels a run of the other', async () => {
    const key = newKey();
    const onA = sdk(a.url, key).client;
    const onB = sdk(b.url, key).client;
    const thread = await onA.threads.create();
    let runId = '';
    const streamed = collect(
      onA.runs.stream(thread.thread_id, 'slow', {
        input: userInput('x'),
        config: { configurable: { wait_ms: 30_000 } },
        onRunCreated: (m) => (runId = m.run_id),
      }),
    );
    await waitFor(() => runId !== '' && registry.started.has(runId));
    expect((await onB.runs.get(thread.thread_id, runId)).status).toBe('running');
    expect((await onB.threads.get(thread.thread_id)).status).toBe('busy');
    const joined = onB.runs.join(thread.thread_id, runId);
    await onB.runs.cancel(thread.thread_id, runId, true);
    expect(registry.cancelled.has(runId)).toBe(true);
    expect((await onB.runs.get(thread.thread_id, runId)).status).toBe('interrupted');
    await joined;
    expect((await streamed).at(-1)).toMatchObject({ event: 'error', data: { error: 'CancelledError' } });
  }, 20_000);
});
