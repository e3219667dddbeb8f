import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, startRedisOnPort, type RedisProcess } from '../../../support/redis-server.ts';
import { startPrivatePostgres, type PrivatePostgres } from '../../helpers/private-postgres.ts';
import { httpUrl } from '../../helpers/target-url.ts';
import { client, deploymentBody, makeRepo, startControlPlane, type TestRepo } from '../control-plane/helpers.ts';
import { BARE_APP, deployed, target } from './helpers.ts';

/**
 * Issue 36, "Done means": with a database per deployment (DEPLOYMENTS_DATABASE_URI) and a Redis (REDIS_URL), a
 * deployment's threads, runs, checkpoints and store items survive a restart of Redis: none of them is in Redis (only
 * the run relay's ephemeral keys are), and the deployment serves on after Redis comes back, new runs included. The
 * operator's Redis as an operator runs it (a password on the default user, so each deployment gets its own ACL user;
 * append-only, so the control plane's records survive too), private, restarted on its port; a private scram-only
 * PostgreSQL.
 */
const PASSWORD = `redis-${randomBytes(12).toString('hex')}`;
const OPERATOR_PASSWORD = `operator-${randomBytes(12).toString('hex')}`;
const DATA = `data-${randomUUID().slice(0, 8)}`;
let pg: PrivatePostgres;
let redis: RedisProcess;
let redisDir: string;
let repo: TestRepo;
let workDir: string;

/** Its own folder, kept across the restart (the append-only file); the same port the second time. */
const startOwnRedis = (port?: number) => {
  const opts = { dir: redisDir, args: ['--requirepass', PASSWORD, '--appendonly', 'yes'] };
  return port === undefined ? startRedis(opts) : startRedisOnPort(port, 5000, opts);
};

beforeAll(async () => {
  pg = await startPrivatePostgres();
  const admin = new (await import('pg')).default.Client({ connectionString: pg.url });
  await admin.connect();
  await admin.query(`CREATE ROLE gw_operator LOGIN CREATEDB CREATEROLE PASSWORD '${OPERATOR_PASSWORD}'`);
  await admin.end();
  redisDir = mkdtempSync(join(tmpdir(), 'redis-restart-'));
  redis = await startOwnRedis();
  repo = makeRepo(BARE_APP);
  workDir = mkdtempSync(join(tmpdir(), 'redis-restart-work-'));
}, 60_000);

afterAll(async () => {
  repo?.remove();
  await redis?.stop();
  await pg?.stop();
  rmSync(workDir, { recursive: true, force: true });
  rmSync(redisDir, { recursive: true, force: true });
});

async function keysOf(pattern: string): Promise<string[]> {
  const admin = new Redis({ port: redis.port, password: PASSWORD, lazyConnect: true });
  await admin.connect();
  try {
    return await admin.keys(pattern);
  } finally {
    admin.disconnect();
  }
}

describe('a deployment on its own database when Redis restarts', () => {
  it('keeps its threads, runs, state and store items, none of them in Redis, and runs again', async () => {
    const cp = await startControlPlane(
      {
        REDIS_URL: `redis://:${PASSWORD}@127.0.0.1:${redis.port}`,
        DEPLOYMENT_DATA_PREFIX: DATA,
        BUILD_WORK_DIR: workDir,
        DEPLOYMENTS_DATABASE_URI: pg.urlAs('gw_operator', OPERATOR_PASSWORD, 'postgres'),
      },
      { host: undefined },
    );
    try {
      const tenant = await cp.tenant();
      const api = client(cp.url, tenant);
      const d = (await api.post('/deployments', deploymentBody(repo.url))).json;
      await deployed(api, d.id, d.latest_revision_id);
      const sdk = new Client({ apiUrl: await httpUrl(target(cp, d.id)), apiKey: tenant.key });
      const thread = await sdk.threads.create();
      await sdk.runs.wait(thread.thread_id, 'echo', { input: { text: 'before the restart' } });
      await sdk.store.putItem(['notes'], 'kept', { text: 'in its database' });

      // Nothing of the deployment's data in Redis: only the relay's ephemeral keys under its prefix.
      const keys = () => keysOf(`${DATA}*`);
      expect((await keys()).filter((k) => !k.includes(':relay:'))).toEqual([]);

      const port = redis.port;
      await redis.stop();
      redis = await startOwnRedis(port);

      expect((await sdk.threads.getState(thread.thread_id)).values).toMatchObject({
        answer: expect.stringMatching(/before the restart$/),
      });
      expect((await sdk.runs.list(thread.thread_id)).map((r) => r.status)).toEqual(['success']);
      expect((await sdk.store.getItem(['notes'], 'kept'))?.value).toEqual({ text: 'in its database' });
      // It runs again once Redis is back (its relay and claims reconnect).
      const after = await sdk.runs.wait(thread.thread_id, 'echo', { input: { text: 'after the restart' } });
      expect(after).toMatchObject({ answer: expect.stringMatching(/after the restart$/) });
      expect((await sdk.runs.list(thread.thread_id)).map((r) => r.status)).toEqual(['success', 'success']);
      // Its relay is back too: the new run's frames went to a Stream in the restarted Redis.
      const runs = await sdk.runs.list(thread.thread_id);
      expect(await keys()).toContainEqual(expect.stringContaining(`:relay:run:${runs[0]!.run_id}`));
    } finally {
      await cp.close();
    }
  }, 180_000);
});
