import pino from 'pino';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAgentStorage } from '../../../src/services/agent-server/store/open-storage.ts';
import { ownDatabase, type OwnDatabase } from '../../helpers/shared-postgres.ts';
import { EXAMPLE_API_KEY_APP, newKey, sdk, startAgentServer, userInput, type RunningAgentServer } from './helpers.ts';

/**
 * With DATABASE_URI, an Agent Server that is closed and started again (new process state, new pool, same database)
 * still has its threads, their runs and state, and its store items, as the unmodified SDK reads them; the
 * conversation continues from the stored checkpoint. A database of this file's own on the shared server.
 */
let db: OwnDatabase;
const key = newKey('acme');

beforeAll(async () => {
  db = await ownDatabase();
});
afterAll(async () => {
  await db?.drop();
});

async function start(): Promise<RunningAgentServer> {
  const log = pino({ level: 'silent' });
  const storage = await openAgentStorage({
    database: { uri: db.uri, poolSize: 3 },
    redis: null,
    redisPrefix: 'x',
    log,
  });
  expect(storage.store.kind).toBe('postgres');
  return startAgentServer({ configPath: EXAMPLE_API_KEY_APP, ...storage, log });
}

type Message = { content: string };
const texts = (values: unknown): string[] => ((values as { messages: Message[] }).messages ?? []).map((m) => m.content);

describe('agent server restart over PostgreSQL', () => {
  it('keeps the thread, its run, its state and store items; the conversation continues', async () => {
    const first = await start();
    const { client } = sdk(first.url, key);
    const thread = await client.threads.create({ metadata: { purpose: 'pg-restart' } });
    await client.runs.wait(thread.thread_id, 'agent', { input: userInput('hello there') });
    const before = await client.threads.getState(thread.thread_id);
    expect(texts(before.values)[0]).toBe('hello there');
    expect(texts(before.values)).toContain('Hello, acme!');
    await client.store.putItem(['memories', 'acme'], 'k', { kept: true });
    const [runBefore] = await client.runs.list(thread.thread_id);
    expect(runBefore).toMatchObject({ status: 'success' });
    await first.close();

    // What the first server wrote is in the database's tables.
    const raw = new pg.Client({ connectionString: db.uri });
    await raw.connect();
    try {
      const counted = await raw.query(
        `SELECT (SELECT count(*) FROM agent_threads)::int AS threads, (SELECT count(*) FROM agent_runs)::int AS runs,
                (SELECT count(*) FROM agent_items)::int AS items,
                (SELECT count(*) FROM checkpoints WHERE thread_id = $1)::int AS checkpoints`,
        [thread.thread_id],
      );
      expect(counted.rows[0]).toMatchObject({ threads: 1, runs: 1, items: 1 });
      expect(counted.rows[0].checkpoints).toBeGreaterThan(0);
    } finally {
      await raw.end();
    }

    const second = await start();
    try {
      const { client: again } = sdk(second.url, key);
      expect(await again.threads.get(thread.thread_id)).toMatchObject({
        thread_id: thread.thread_id,
        metadata: { purpose: 'pg-restart' },
        status: 'idle',
      });
      const state = await again.threads.getState(thread.thread_id);
      expect(state.values).toEqual(before.values);
      expect(state.checkpoint).toEqual(before.checkpoint);
      expect(state.parent_checkpoint).toEqual(before.parent_checkpoint);
      expect(await again.runs.list(thread.thread_id)).toEqual([runBefore]);
      expect(await again.store.getItem(['memories', 'acme'], 'k')).toMatchObject({ value: { kept: true } });
      const storage = await fetch(`${second.url}/threads/${thread.thread_id}/storage`, {
        headers: { 'x-api-key': key },
      });
      expect(storage.status).toBe(200);
      const measured = (await storage.json()) as { total_bytes: number; channel_values: { rows: number } };
      expect(measured.total_bytes).toBeGreaterThan(0);
      expect(measured.channel_values.rows).toBeGreaterThan(0);
      const history = await again.threads.getHistory(thread.thread_id);
      expect(history.length).toBeGreaterThan(1);

      // A copy carries the stored values (PostgresSaver keeps them apart from the checkpoint).
      const copy = await again.threads.copy(thread.thread_id);
      expect((await again.threads.getState(copy.thread_id)).values).toEqual(before.values);

      // keep_latest rewrites the latest checkpoint alone: its values too.
      expect(await again.threads.prune([copy.thread_id], { strategy: 'keep_latest' })).toEqual({ pruned_count: 1 });
      expect((await again.threads.getState(copy.thread_id)).values).toEqual(before.values);
      expect(await again.threads.getHistory(copy.thread_id)).toHaveLength(1);

      await again.runs.wait(thread.thread_id, 'agent', { input: userInput('still there?') });
      const after = texts((await again.threads.getState(thread.thread_id)).values);
      expect(after.slice(0, texts(before.values).length)).toEqual(texts(before.values));
      expect(after[texts(before.values).length]).toBe('still there?');
      expect(after.filter((m) => m === 'Hello, acme!')).toHaveLength(1);
    } finally {
      await second.close();
    }
  });

  it('a database that cannot be reached fails at start naming DATABASE_URI, without the password', async () => {
    const err = await openAgentStorage({
      database: { uri: 'postgres://someone:secret@127.0.0.1:1/nowhere', poolSize: 1 },
      redis: null,
      redisPrefix: 'x',
      log: pino({ level: 'silent' }),
    }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(
      /^DATABASE_URI\b.*could not open postgres:\/\/someone:\*\*\*@127\.0\.0\.1:1\/nowhere/,
    );
    expect((err as Error).message).not.toContain('secret');
  });
});
