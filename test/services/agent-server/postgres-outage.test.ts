import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAgentStorage } from '../../../src/services/agent-server/store/open-storage.ts';
import { startPostgresCluster, type PostgresCluster } from '../../../support/private-postgres.ts';
import { registry } from './fixtures/app/graphs.ts';
import {
  collect,
  eventually,
  FIXTURE_APP,
  newKey,
  sdk,
  startAgentServer,
  userInput,
  type RunningAgentServer,
} from './helpers.ts';

/**
 * PostgreSQL restarted (an immediate stop, as a crash: crash recovery at the next start) under an Agent Server with
 * runs going on, on a private cluster: the committed thread state is all there afterwards, the pool opens new
 * connections and the server serves again, and a run that failed in the outage ends (its stream with an error, its
 * record `error` once its lease lapses), never left hanging.
 */
let cluster: PostgresCluster;
let agent: RunningAgentServer;
const key = newKey('acme');

beforeAll(async () => {
  cluster = await startPostgresCluster();
  const log = pino({ level: 'silent' });
  const storage = await openAgentStorage({
    database: { uri: cluster.url, poolSize: 4 },
    redis: null,
    redisPrefix: 'x',
    log,
  });
  agent = await startAgentServer({ configPath: FIXTURE_APP, ...storage, log });
}, 60_000);
afterAll(async () => {
  await agent?.close();
  await cluster?.destroy();
});

const texts = (values: unknown): string[] =>
  ((values as { messages?: { content: string }[] }).messages ?? []).map((m) => m.content);

describe('a PostgreSQL restart under the Agent Server', () => {
  it('loses no committed state, fails the run caught in it, and serves again', { timeout: 90_000 }, async () => {
    const { client } = sdk(agent.url, key);
    const kept = await client.threads.create({ metadata: { purpose: 'outage' } });
    await client.runs.wait(kept.thread_id, 'agent', { input: userInput('before the outage') });
    const before = await client.threads.getState(kept.thread_id);
    expect(texts(before.values)).toContain('before the outage');

    // A run that is asleep in its graph when the database goes away, and must write its checkpoint after.
    const caught = await client.threads.create();
    const stream = collect(
      client.runs.stream(caught.thread_id, 'slow', {
        input: userInput('caught in the outage'),
        config: { configurable: { wait_ms: 1500 } },
        streamMode: ['values'],
      }),
    );
    const runId = await eventually(async () => {
      const [run] = await client.runs.list(caught.thread_id);
      return run !== undefined && registry.started.has(run.run_id) ? run.run_id : undefined;
    });
    await cluster.stop('immediate');
    const events = await stream; // ends, not hangs
    expect(events.at(-1)?.event).toBe('error');

    // While it is down, a call answers (an error), it does not hang.
    const refused = await fetch(`${agent.url}/threads/${kept.thread_id}`, { headers: { 'x-api-key': key } });
    expect(refused.status).toBeGreaterThanOrEqual(500);

    await cluster.start();
    // The pool recovers: the connections the restart cut are replaced on demand.
    const state = await eventually(() => client.threads.getState(kept.thread_id).catch(() => undefined), 15_000, 200);
    expect(state.values).toEqual(before.values);
    expect(state.checkpoint).toEqual(before.checkpoint);
    await client.runs.wait(kept.thread_id, 'agent', { input: userInput('after the outage') });
    const after = texts((await client.threads.getState(kept.thread_id)).values);
    expect(after.slice(0, texts(before.values).length)).toEqual(texts(before.values));
    expect(after).toContain('after the outage');

    // The run the outage failed could not record its end then: once its lease lapses it reads as `error`, and its
    // thread leaves `busy`.
    const ended = await eventually(
      async () => {
        const run = await client.runs.get(caught.thread_id, runId);
        return run.status === 'error' ? run : undefined;
      },
      45_000,
      500,
    );
    expect(ended.status).toBe('error');
    expect((await client.threads.get(caught.thread_id)).status).not.toBe('busy');
  });
});
