import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import pino from 'pino';
import { routeTableFromSettings } from '../../../src/routing/from-settings.ts';
import type { RouteTable } from '../../../src/routing/route-table.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteByPrefix, keysByPrefix } from '../../helpers/redis-keys.ts';
import {
  client,
  deploymentBody,
  eventually,
  makeRepo,
  startControlPlane,
  type TestRepo,
} from '../control-plane/helpers.ts';
import { alive, ask, BARE_APP, deployed, target } from './helpers.ts';
import { httpUrl } from '../../helpers/target-url.ts';
import { SHARED_REDIS_URL, sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';

/**
 * With REDIS_URL a deployment's Agent Server keeps its data in Redis under
 * its own prefix; a restarted control plane (a second one on the same
 * prefixes and BUILD_WORK_DIR) serves every DEPLOYED deployment again from
 * its kept build, without rebuilding, with its threads; a delete removes
 * that prefix and nothing else. The shared Redis is used under unique
 * prefixes, removed afterwards.
 */

const RUN = uniquePrefix('test:deploy-restart');
const DATA = `test-deploy-data-${randomUUID().slice(0, 8)}`;
const redis = sharedRedis();
let repo: TestRepo;
let workDir: string;

beforeAll(() => {
  repo = makeRepo(BARE_APP);
  workDir = mkdtempSync(join(tmpdir(), 'deploy-restart-'));
});

afterAll(async () => {
  repo?.remove();
  rmSync(workDir, { recursive: true, force: true });
  await deleteByPrefix(redis, RUN);
  await deleteByPrefix(redis, DATA);
  await redis.quit();
});

const env = () => ({
  REDIS_URL: SHARED_REDIS_URL,
  CONTROL_PLANE_PREFIX: `${RUN}:cp`,
  API_KEYS_PREFIX: `${RUN}:keys`,
  DEPLOYMENT_DATA_PREFIX: DATA,
  ROUTES_PREFIX: `${RUN}:routes`,
  BUILD_WORK_DIR: workDir,
  // The shared Redis has no password (no user of its own per deployment is possible): another organisation's
  // deployment runs only with every tenant trusted (revision-gets-platform-redis-credentials.test.ts has the ACLs).
  TRUST_ALL_TENANTS: '1',
});

describe('deployments on Redis', () => {
  it('a restarted control plane serves them again without a rebuild, with their data; delete removes only their data', async () => {
    const first = await startControlPlane(env(), { host: undefined });
    let second: Awaited<ReturnType<typeof startControlPlane>> | undefined;
    const edges: RouteTable[] = [];
    try {
      const tenant = await first.tenant();
      const api = client(first.url, tenant);
      const d = (
        await api.post('/deployments', deploymentBody(repo.url, { secrets: [{ name: 'TOKEN', value: 'kept' }] }))
      ).json;
      await deployed(api, d.id, d.latest_revision_id);
      const sdk = new Client({ apiUrl: await httpUrl(target(first, d.id)), apiKey: tenant.key });
      const thread = await sdk.threads.create();
      await sdk.runs.wait(thread.thread_id, 'echo', { input: { text: 'remember me' } });
      expect((await keysByPrefix(redis, `${DATA}:${d.id}:`)).length).toBeGreaterThan(0);
      const firstPid = first.cp.serving!.current(d.id)!.proc!.pid;
      await first.close();
      expect(alive(firstPid)).toBe(false);

      second = await startControlPlane(env(), { host: undefined });
      await second.cp.resumed;
      const again = target(second, d.id);
      // The table in Redis is the edges': one opened as an edge does follows the control plane's writes.
      const edgeTable = routeTableFromSettings(
        { redisUrl: SHARED_REDIS_URL, routesPrefix: `${RUN}:routes`, region: 'us' },
        pino({ level: 'silent' }),
      );
      edges.push(edgeTable.table);
      await eventually(() => edgeTable.table.get(d.id)?.target === again, 10_000, 'the edge table follows');
      expect(await ask(again, tenant)).toBe('v1 hello kept: hi');
      const sdk2 = new Client({ apiUrl: await httpUrl(again), apiKey: tenant.key });
      const state = await sdk2.threads.getState(thread.thread_id);
      expect((state.values as { answer: string }).answer).toBe('v1 hello kept: remember me');
      const api2 = client(second.url, tenant);
      const revisions = (await api2.get(`/deployments/${d.id}/revisions`)).json.resources;
      expect(revisions.map((r: { id: string; status: string }) => [r.id, r.status])).toEqual([
        [d.latest_revision_id, 'DEPLOYED'],
      ]);
      expect(second.logs.lines().some((l) => l.msg === 'revision status')).toBe(false);
      await second.logs.waitFor((l) => l.msg === 'deployment served again after a restart' && l.deploymentId === d.id);

      const sentinel = `${DATA}:${d.id}x:sentinel`;
      await redis.set(sentinel, 'another deployment');
      const pid = second.cp.serving!.current(d.id)!.proc!.pid;
      expect((await api2.delete(`/deployments/${d.id}`)).status).toBe(204);
      expect(await keysByPrefix(redis, `${DATA}:${d.id}:`)).toEqual([]);
      expect(await redis.get(sentinel)).toBe('another deployment');
      expect(second.cp.routes.get(d.id)).toBeUndefined();
      await eventually(() => edgeTable.table.get(d.id) === undefined, 10_000, 'the edge table forgets');
      expect(alive(pid)).toBe(false);
      expect(existsSync(second.cp.builds.folderOf(d.id))).toBe(false);
    } finally {
      for (const table of edges) await table.close();
      await second?.close();
      await first.close().catch(() => {});
    }
  }, 90_000);
});
