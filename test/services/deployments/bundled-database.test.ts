import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ORG, DEFAULT_WORKSPACE } from '../../../src/keys/bootstrap.ts';
import { RedisKeyRegistry } from '../../../src/keys/redis-registry.ts';
import { startTestGateway } from '../../helpers/gateway.ts';
import { deleteByPrefix, keysByPrefix } from '../../helpers/redis-keys.ts';
import { ownDatabase, type OwnDatabase } from '../../helpers/shared-postgres.ts';
import { SHARED_REDIS_URL, sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';

/**
 * The gateway's bundled Agent Server with DATABASE_URI keeps its threads in that database, not in REDIS_URL's Redis
 * (which keeps the key registry): the same storage entry point as a deployment's process and the server run alone.
 */
const RUN = uniquePrefix('test:bundled-database');
const redis = sharedRedis();
let db: OwnDatabase;
let key = '';

beforeAll(async () => {
  db = await ownDatabase();
  const keys = new RedisKeyRegistry(redis, { prefix: `${RUN}:keys` });
  await keys.addWorkspace(DEFAULT_ORG, DEFAULT_WORKSPACE);
  key = (await keys.createKey(DEFAULT_ORG)).key;
});
afterAll(async () => {
  await deleteByPrefix(redis, RUN);
  await redis.quit();
  await db?.drop();
});

describe('the bundled Agent Server with DATABASE_URI', () => {
  it('keeps its threads in that database, none in Redis', async () => {
    const gateway = await startTestGateway({
      REDIS_URL: SHARED_REDIS_URL,
      DATABASE_URI: db.uri,
      DATABASE_POOL_SIZE: '2',
      APP_CONFIG: fileURLToPath(new URL('../../../examples/app/langgraph.api-key.json', import.meta.url)),
      KEY_PREFIX: `t${randomBytes(6).toString('hex')}`,
      CONTROL_PLANE_PREFIX: `${RUN}:cp`,
      API_KEYS_PREFIX: `${RUN}:keys`,
      ROUTES_PREFIX: `${RUN}:routes`,
      AGENT_STORE_PREFIX: `${RUN}:agent`,
      NODE_ENV: 'test',
      LOG_LEVEL: 'warn',
    });
    try {
      const res = await fetch(`${gateway.url}/threads`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ metadata: { where: 'postgres' } }),
      });
      expect(res.status).toBe(200);
      const { thread_id } = (await res.json()) as { thread_id: string };
      const raw = new pg.Client({ connectionString: db.uri });
      await raw.connect();
      try {
        const rows = await raw.query('SELECT thread_id FROM agent_threads');
        expect(rows.rows.map((r) => r.thread_id)).toEqual([thread_id]);
      } finally {
        await raw.end();
      }
      expect(await keysByPrefix(redis, `${RUN}:agent`)).toEqual([]);
    } finally {
      await gateway.close();
    }
  }, 60_000);

  it('a DATABASE_URI it cannot reach stops the gateway at start: one line naming it, without the password, exit 2', async () => {
    const root = fileURLToPath(new URL('../../../', import.meta.url));
    const child = spawn(process.execPath, ['bin/gateway.js', 'start'], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        PORT: '0',
        ADMIN_PORT: '0',
        LOG_LEVEL: 'warn',
        DATABASE_URI: 'postgres://u:secret@127.0.0.1:1/db',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
    expect(code).toBe(2);
    const lines = stderr.split('\n').filter((l) => l.trim() !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^gateway start: DATABASE_URI: .*could not open postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/db/);
  }, 60_000);
});
