import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploymentDatabaseName } from '../../../src/services/control-plane/databases/database-names.ts';
import { startPrivatePostgres, type PrivatePostgres } from '../../helpers/private-postgres.ts';
import { deleteByPrefix } from '../../helpers/redis-keys.ts';
import { SHARED_REDIS_URL, sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';
import { httpUrl } from '../../helpers/target-url.ts';
import { client, deploymentBody, makeRepo, startControlPlane, type TestRepo } from '../control-plane/helpers.ts';
import { BARE_APP, deployed, target } from './helpers.ts';

/**
 * With DEPLOYMENTS_DATABASE_URI a deployment's threads live in its own
 * PostgreSQL database: a restarted control plane (a second one on the same
 * Redis prefixes and BUILD_WORK_DIR) serves it again with its threads, its
 * database neither made again nor emptied, and a deployment deleted before
 * the restart gets nothing back. A private scram-only cluster; the shared
 * Redis (control-plane records) under unique prefixes, removed afterwards.
 */
const RUN = uniquePrefix('test:deploy-db-restart');
const DATA = `test-deploy-db-data-${randomUUID().slice(0, 8)}`;
const redis = sharedRedis();
const OPERATOR_PASSWORD = `operator-${randomBytes(12).toString('hex')}`;
let server: PrivatePostgres;
let repo: TestRepo;
let workDir: string;

async function rows(sql: string, params: unknown[] = []): Promise<unknown[]> {
  const c = new pg.Client({ connectionString: server.url });
  await c.connect();
  try {
    return (await c.query(sql, params)).rows;
  } finally {
    await c.end();
  }
}

beforeAll(async () => {
  server = await startPrivatePostgres();
  await rows(`CREATE ROLE gw_operator LOGIN CREATEDB CREATEROLE PASSWORD '${OPERATOR_PASSWORD}'`);
  repo = makeRepo(BARE_APP);
  workDir = mkdtempSync(join(tmpdir(), 'deploy-db-restart-'));
}, 60_000);

afterAll(async () => {
  repo?.remove();
  rmSync(workDir, { recursive: true, force: true });
  await deleteByPrefix(redis, RUN);
  await deleteByPrefix(redis, DATA);
  await redis.quit();
  await server?.stop();
});

const env = () => ({
  REDIS_URL: SHARED_REDIS_URL,
  CONTROL_PLANE_PREFIX: `${RUN}:cp`,
  API_KEYS_PREFIX: `${RUN}:keys`,
  DEPLOYMENT_DATA_PREFIX: DATA,
  ROUTES_PREFIX: `${RUN}:routes`,
  BUILD_WORK_DIR: workDir,
  // The shared Redis has no password: another organisation's deployment runs only with every tenant trusted.
  TRUST_ALL_TENANTS: '1',
  DEPLOYMENTS_DATABASE_URI: server.urlAs('gw_operator', OPERATOR_PASSWORD, 'postgres'),
});

describe('deployments on their own PostgreSQL databases', () => {
  it('a restarted control plane serves them again with their threads; a deleted one gets nothing back', async () => {
    const first = await startControlPlane(env(), { host: undefined });
    let second: Awaited<ReturnType<typeof startControlPlane>> | undefined;
    try {
      const tenant = await first.tenant();
      const api = client(first.url, tenant);
      const kept = (await api.post('/deployments', deploymentBody(repo.url))).json;
      const gone = (await api.post('/deployments', deploymentBody(repo.url))).json;
      await deployed(api, kept.id, kept.latest_revision_id);
      await deployed(api, gone.id, gone.latest_revision_id);
      const sdk = new Client({ apiUrl: await httpUrl(target(first, kept.id)), apiKey: tenant.key });
      const marker = randomUUID();
      const thread = await sdk.threads.create({ metadata: { marker } });
      await sdk.runs.wait(thread.thread_id, 'echo', { input: { text: 'remember me' } });
      expect((await api.delete(`/deployments/${gone.id}`)).status).toBe(204);
      const names = [deploymentDatabaseName(kept.id), deploymentDatabaseName(gone.id)];
      const databases = () =>
        rows('SELECT datname FROM pg_database WHERE datname = ANY($1) ORDER BY datname', [names]).then((r) =>
          (r as { datname: string }[]).map((x) => x.datname),
        );
      const oid = async () => (await rows('SELECT oid FROM pg_database WHERE datname = $1', [names[0]]))[0];
      expect(await databases()).toEqual([names[0]]);
      // The thread's state is in its database (LangGraph's PostgresSaver table), not in Redis.
      const inside = new pg.Client({ connectionString: server.url.replace(/\/postgres$/, `/${names[0]}`) });
      await inside.connect();
      const saved = await inside.query('SELECT 1 FROM checkpoints WHERE thread_id = $1', [thread.thread_id]);
      await inside.end();
      expect(saved.rowCount).toBeGreaterThan(0);
      const before = await oid();
      await first.close();

      second = await startControlPlane(env(), { host: undefined });
      await second.cp.resumed;
      const sdk2 = new Client({ apiUrl: await httpUrl(target(second, kept.id)), apiKey: tenant.key });
      const state = await sdk2.threads.getState(thread.thread_id);
      expect((state.values as { answer: string }).answer).toMatch(/^v1 .*: remember me$/);
      expect((await sdk2.threads.get(thread.thread_id)).metadata).toMatchObject({ marker });
      // The same database (not dropped and made again), and none for the deleted deployment.
      expect(await oid()).toEqual(before);
      expect(await databases()).toEqual([names[0]]);
      expect(await rows('SELECT 1 FROM pg_roles WHERE rolname = $1', [names[1]])).toEqual([]);
    } finally {
      await second?.close();
      await first.close().catch(() => {});
    }
  }, 120_000);
});
