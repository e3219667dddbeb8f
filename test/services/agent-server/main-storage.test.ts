import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../support/redis-server.ts';
import { deleteByPrefix, keysByPrefix } from '../../helpers/redis-keys.ts';
import { SHARED_REDIS_URL, sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';
import { ownDatabase, type OwnDatabase } from '../../helpers/shared-postgres.ts';
import { EXAMPLE_API_KEY_APP, sdk } from './helpers.ts';

/**
 * The Agent Server run alone (main.ts, spawned as a process) keeps its data where its settings say: in the
 * PostgreSQL of DATABASE_URI, else in the Redis of REDIS_URL (or REDIS_URI), else in memory; a database it cannot
 * reach, or a setting it cannot read, ends it at start with one line naming the variable, exit 2.
 */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const API_KEY = 'k-test-0123456789abcdef';
let db: OwnDatabase;
const redis = sharedRedis();
const prefix = uniquePrefix('test:main-storage');

beforeAll(async () => {
  db = await ownDatabase();
});
afterAll(async () => {
  await deleteByPrefix(redis, prefix);
  await redis.quit();
  await db?.drop();
});

function startMain(env: Record<string, string>): { child: ChildProcessWithoutNullStreams; stderr: () => string } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/services/agent-server/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      AGENT_SERVER_API_KEYS: API_KEY,
      APP_CONFIG: EXAMPLE_API_KEY_APP,
      LOG_LEVEL: 'warn',
      ...env,
    },
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.resume();
  return { child, stderr: () => stderr };
}

const exitOf = (child: ChildProcessWithoutNullStreams) =>
  new Promise<number | null>((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.once('close', (c) => resolve(c)),
  );

async function ready(url: string, child: ChildProcessWithoutNullStreams): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`main.ts exited ${child.exitCode}`);
    if (
      await fetch(`${url}/ok`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('main.ts did not answer in 30 s');
}

/** Starts main.ts with `env`, makes a thread and a store item through the SDK, stops it (SIGTERM, exit 0). */
async function writeThrough(env: Record<string, string>): Promise<string> {
  const port = await freePort();
  const { child } = startMain({ ...env, AGENT_SERVER_PORT: String(port) });
  try {
    const url = `http://127.0.0.1:${port}`;
    await ready(url, child);
    const { client } = sdk(url, API_KEY);
    const thread = await client.threads.create({ metadata: { via: 'main' } });
    await client.store.putItem(['notes'], 'n1', { text: 'kept' });
    expect(await client.threads.get(thread.thread_id)).toMatchObject({ metadata: { via: 'main' } });
    return thread.thread_id;
  } finally {
    child.kill('SIGTERM');
    expect(await exitOf(child)).toBe(0);
  }
}

describe('main.ts storage', () => {
  it('with DATABASE_URI: reads and writes land in that database, and a second start reads them', async () => {
    const threadId = await writeThrough({ DATABASE_URI: db.uri, DATABASE_POOL_SIZE: '2' });
    const raw = new pg.Client({ connectionString: db.uri });
    await raw.connect();
    try {
      const threads = await raw.query('SELECT thread_id FROM agent_threads');
      expect(threads.rows.map((r) => r.thread_id)).toEqual([threadId]);
      const items = await raw.query('SELECT key, value FROM agent_items');
      expect(items.rows).toEqual([{ key: 'n1', value: { text: 'kept' } }]);
    } finally {
      await raw.end();
    }
    const port = await freePort();
    const { child } = startMain({ DATABASE_URI: db.uri, AGENT_SERVER_PORT: String(port) });
    try {
      await ready(`http://127.0.0.1:${port}`, child);
      const { client } = sdk(`http://127.0.0.1:${port}`, API_KEY);
      expect(await client.threads.get(threadId)).toMatchObject({ thread_id: threadId, metadata: { via: 'main' } });
    } finally {
      child.kill('SIGTERM');
      await exitOf(child);
    }
  }, 90_000);

  it("with REDIS_URI (REDIS_URL's alias) and no DATABASE_URI: in that Redis, under AGENT_STORE_PREFIX", async () => {
    const threadId = await writeThrough({ REDIS_URI: SHARED_REDIS_URL, AGENT_STORE_PREFIX: prefix });
    expect(await keysByPrefix(redis, `${prefix}:thread:${threadId}`)).toHaveLength(1);
    expect((await keysByPrefix(redis, `${prefix}:items:`)).length).toBeGreaterThan(0);
  }, 60_000);

  it.each([
    [
      'an unreachable DATABASE_URI',
      { DATABASE_URI: 'postgres://u:secret@127.0.0.1:1/none' },
      /^agent server: DATABASE_URI\b.*could not open/,
    ],
    ['a DATABASE_URI that is not a postgres URL', { DATABASE_URI: 'mysql://x@h/db' }, /^agent server: DATABASE_URI\b/],
    [
      'a DATABASE_POOL_SIZE of 0',
      { DATABASE_URI: 'postgres://x@127.0.0.1/db', DATABASE_POOL_SIZE: '0' },
      /^agent server: DATABASE_POOL_SIZE\b/,
    ],
    [
      'REDIS_URI and REDIS_URL set apart',
      { REDIS_URL: 'redis://127.0.0.1:1', REDIS_URI: 'redis://127.0.0.1:2' },
      /^agent server: REDIS_URI\b/,
    ],
  ])(
    '%s ends it at start: one line naming the variable, exit 2',
    async (_, env, line) => {
      const { child, stderr } = startMain({ ...env, AGENT_SERVER_PORT: '0' });
      expect(await exitOf(child)).toBe(2);
      const lines = stderr()
        .split('\n')
        .filter((l) => l.trim() !== '');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(line);
      expect(lines[0]).not.toContain('secret');
    },
    30_000,
  );
});
