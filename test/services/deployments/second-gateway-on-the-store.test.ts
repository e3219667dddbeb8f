import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisKeyRegistry } from '../../../src/keys/redis-registry.ts';
import { deleteByPrefix } from '../../helpers/redis-keys.ts';
import { SHARED_REDIS_URL, sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';
import { spawnGateway, type SpawnedGateway } from '../../helpers/spawn-gateway.ts';
import {
  client,
  deploymentBody,
  eventually,
  makeRepo,
  TEST_SECRETS_KEY,
  type TestRepo,
} from '../control-plane/helpers.ts';
import { BARE_APP, deployed } from './helpers.ts';

/**
 * Issue 37, "Why": gateway A served deployment D; gateway B started on the same Redis, took D's route (it served D
 * itself), then stopped: its route said `starting` and A answered 503 for D for good while the API said READY. Now
 * one gateway on a store hosts (the hosting lease): B answers the API and its edge reaches A's process (one machine:
 * the Unix socket is reachable), B stopping changes nothing, A draining hands D over to B, and A killed hands D over
 * once the lease lapses; the runtime log A's revision wrote reads through B; a deployment created and deleted
 * through B is built, served and stopped by A. Real gateway processes on port 0, one Redis prefix, one BUILD_WORK_DIR.
 */

const RUN = uniquePrefix('test:second-gateway');
const DATA = `second-gateway-${randomBytes(4).toString('hex')}`;
const LEASE_SECONDS = 2;
/** A handover: the lease (at most its ttl, plus a try every ttl/3) and the revision's start. */
const HANDOVER_MS = 30_000;
const redis = sharedRedis();
let repo: TestRepo;
let workDir: string;
const tenant = {
  org: `org-${randomBytes(4).toString('hex')}`,
  workspace: `ws-${randomBytes(4).toString('hex')}`,
  key: '',
};
const started: SpawnedGateway[] = [];

const start = async (): Promise<SpawnedGateway> => {
  const gw = await spawnGateway({
    REDIS_URL: SHARED_REDIS_URL,
    KEY_PREFIX: `t${randomBytes(6).toString('hex')}`,
    CONTROL_PLANE_PREFIX: `${RUN}:cp`,
    API_KEYS_PREFIX: `${RUN}:keys`,
    ROUTES_PREFIX: `${RUN}:routes`,
    AGENT_STORE_PREFIX: `${RUN}:agent`,
    DEPLOYMENT_DATA_PREFIX: DATA,
    SECRETS_KEY: TEST_SECRETS_KEY,
    BUILD_WORK_DIR: workDir,
    HOSTING_LEASE_SECONDS: String(LEASE_SECONDS),
    NODE_ENV: 'test',
    TRUST_ALL_TENANTS: '1',
  });
  started.push(gw);
  return gw;
};

/** D's status through `gw`'s API and what its url answers through `gw`'s edge. */
const seen = async (gw: SpawnedGateway, id: string): Promise<{ status: string; answer: number }> => {
  const d = (await client(gw.url, tenant).get(`/deployments/${id}`)).json as { status: string };
  const res = await fetch(`${gw.url}/deployments/${id}/ok`, { headers: { 'x-api-key': tenant.key } });
  await res.body?.cancel();
  return { status: d.status, answer: res.status };
};

const servedThrough = (gw: SpawnedGateway, id: string, what: string) =>
  eventually(async () => ((await seen(gw, id)).answer === 200 ? true : null), HANDOVER_MS, what);

beforeAll(async () => {
  repo = makeRepo(BARE_APP);
  workDir = mkdtempSync(join(tmpdir(), 'second-gateway-'));
  const keys = new RedisKeyRegistry(redis, { prefix: `${RUN}:keys` });
  await keys.addWorkspace(tenant.org, tenant.workspace);
  tenant.key = (await keys.createKey(tenant.org)).key;
});

afterAll(async () => {
  await Promise.all(started.map((gw) => gw.kill()));
  repo?.remove();
  rmSync(workDir, { recursive: true, force: true });
  await deleteByPrefix(redis, RUN);
  await deleteByPrefix(redis, DATA);
  await redis.quit();
});

describe('a second gateway on the same store', () => {
  it('never takes a deployment it does not host; takes it over when the host drains or dies', async () => {
    const a = await start();
    const api = client(a.url, tenant);
    const d = (await api.post('/deployments', deploymentBody(repo.url))).json as {
      id: string;
      latest_revision_id: string;
    };
    await deployed(api, d.id, d.latest_revision_id);
    expect(await seen(a, d.id)).toEqual({ status: 'READY', answer: 200 });

    // B starts: it answers the API (shared records) and its edge reaches A's process; it launches nothing.
    const b = await start();
    await new Promise((r) => setTimeout(r, LEASE_SECONDS * 1000));
    expect(await seen(b, d.id)).toEqual({ status: 'READY', answer: 200 });
    expect(await seen(a, d.id)).toEqual({ status: 'READY', answer: 200 });
    expect(b.lines().some((l) => l.msg === 'revision serving')).toBe(false);
    // What A's revision printed is read through B's API (the runtime log is in Redis).
    const printed = (await client(b.url, tenant).get(`/deployments/${d.id}/logs`)).json as { logs: unknown[] };
    expect(printed.logs.length).toBeGreaterThan(0);

    // A deployment created through B is built and served by A (B queues it); deleted through B, A stops it.
    const viaB = client(b.url, tenant);
    const d2 = (await viaB.post('/deployments', deploymentBody(repo.url))).json as {
      id: string;
      latest_revision_id: string;
    };
    await deployed(viaB, d2.id, d2.latest_revision_id);
    expect(await seen(b, d2.id)).toEqual({ status: 'READY', answer: 200 });
    expect(b.lines().some((l) => l.msg === 'revision serving')).toBe(false);
    expect((await viaB.delete(`/deployments/${d2.id}`)).status).toBe(204);
    await a.waitForLine((l) => l.msg === 'deployment deleted through another gateway: stopping it here', 10_000);
    const gone = await fetch(`${a.url}/deployments/${d2.id}/ok`, { headers: { 'x-api-key': tenant.key } });
    expect(gone.status).toBe(404);

    // B stops: D is still served by A (today's bug: A answered 503 "starting" for good).
    await b.stop();
    await new Promise((r) => setTimeout(r, 1500));
    expect(await seen(a, d.id)).toEqual({ status: 'READY', answer: 200 });

    // A drains while C runs: C takes the lease and serves D within the bound.
    const c = await start();
    const drained = Date.now();
    await a.stop();
    await servedThrough(c, d.id, 'D served by C after A drained');
    const handover = Date.now() - drained;
    expect(handover).toBeLessThan(HANDOVER_MS);
    expect(c.lines().some((l) => l.msg === 'revision serving')).toBe(true);
    expect(await seen(c, d.id)).toEqual({ status: 'READY', answer: 200 });

    // C killed (no drain) while E runs: E serves D once the lease lapsed and D started again.
    const e = await start();
    const killed = Date.now();
    await c.kill();
    await servedThrough(e, d.id, 'D served by E after C was killed');
    const takeover = Date.now() - killed;
    expect(takeover).toBeLessThan(LEASE_SECONDS * 1000 + HANDOVER_MS);
    expect(await seen(e, d.id)).toEqual({ status: 'READY', answer: 200 });
    console.log(JSON.stringify({ handoverMs: handover, takeoverAfterKillMs: takeover }));
    await e.stop();
  }, 240_000);
});
