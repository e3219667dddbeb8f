import { randomBytes, randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { route } from '../routing/contract.ts';
import { startDeployment, type TestDeployment } from '../helpers/deployment-upstream.ts';
import { OPEN_RULES, rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { deleteByPrefix } from '../helpers/redis-keys.ts';
import { spawnGateway, type SpawnedGateway } from '../helpers/spawn-gateway.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';
import { SHARED_REDIS_URL, sharedRedis, uniquePrefix } from '../helpers/shared-redis.ts';

/**
 * Several edges on one REDIS_URL share the deployment route table: a change written through one gateway (in this
 * process) reaches another gateway running as its own process (`node bin/gateway.js start`), with no restart. The
 * shared Redis is used under prefixes of this file only, removed afterwards.
 */

const ROUTES_PREFIX = uniquePrefix('test:routes');
const KEY_PREFIX = `t-${randomBytes(6).toString('hex')}`;
const shared = sharedRedis();
let rules: ReturnType<typeof rulesDir>, agent: TestUpstream, control: TestUpstream;
let here: TestGateway, other: SpawnedGateway | undefined, one: TestDeployment, two: TestDeployment;
let env: Record<string, string>;

beforeAll(async () => {
  rules = rulesDir(OPEN_RULES);
  [agent, control, one, two] = await Promise.all([
    startUpstream(),
    startUpstream(),
    startDeployment('one'),
    startDeployment('two'),
  ]);
  env = {
    REDIS_URL: SHARED_REDIS_URL,
    ROUTES_PREFIX,
    KEY_PREFIX,
    RULES_DIR: rules.dir,
    AGENT_SERVER_URL: agent.url,
    CONTROL_PLANE_URL: control.url,
  };
  here = await startTestGateway(env);
});
afterAll(async () => {
  await Promise.all([here?.close(), other?.stop()]);
  await Promise.all([agent, control, one, two].map((u) => u?.close()));
  rules?.remove();
  await deleteByPrefix(shared, ROUTES_PREFIX);
  await deleteByPrefix(shared, KEY_PREFIX);
  await shared.quit();
});

const answer = async (edge: string, id: string) => {
  const res = await request(`${edge}/deployments/${id}/info`);
  const body = (await res.body.json()) as { server?: string; detail?: string };
  return res.statusCode === 200 ? body.server : `${res.statusCode} ${body.detail}`;
};
/** Polls until `check` passes (generous bound; the table's own test shows the path a change takes). */
const eventually = (check: () => Promise<void>) => vi.waitFor(check, { timeout: 5000, interval: 25 });

describe('deployment routes through Redis', () => {
  it('a second gateway process loads the routes at start and follows rollovers and deletes without a restart', async () => {
    const id = randomUUID();
    await here.gateway.routes.set(route(id, one.url, 'rev-1'));
    expect(await answer(here.url, id)).toBe('one');

    other = await spawnGateway(env);
    // Read at start, before listening: served from the first request on.
    expect(await answer(other.url, id)).toBe('one');
    expect(other.lines().find((l) => l.msg === 'gateway listening')).toMatchObject({ routes: 'redis' });

    await here.gateway.routes.set(route(id, two.url, 'rev-2'));
    await eventually(async () => expect(await answer(other!.url, id)).toBe('two'));

    const later = randomUUID();
    await here.gateway.routes.set(route(later, one.url));
    await eventually(async () => expect(await answer(other!.url, later)).toBe('one'));

    // Each edge's copy of the table, on its /metrics: both agree.
    const routesOn = async (adminUrl: string) =>
      /^gateway_deployment_routes (\d+)$/m.exec(await (await request(`${adminUrl}/metrics`)).body.text())?.[1];
    await eventually(async () => expect(await routesOn(other!.adminUrl)).toBe('2'));
    expect(await routesOn(`http://127.0.0.1:${here.gateway.admin.port}`)).toBe('2');

    await here.gateway.routes.delete(id);
    await eventually(async () => expect(await answer(other!.url, id)).toBe(`404 Deployment ${id} not found`));
    expect(await answer(other.url, later)).toBe('one');
  });

  it('rollovers under a loop of requests on both edges, with the limits counted in Redis: zero failed requests', async () => {
    const id = randomUUID();
    await here.gateway.routes.set(route(id, one.url, 'rev-1'));
    await eventually(async () => expect(await answer(other!.url, id)).toBe('one'));
    const failed: string[] = [];
    const served = { one: 0, two: 0 };
    let stop = false;
    const client = async (edge: string) => {
      while (!stop) {
        const got = await answer(edge, id).catch((err: Error) => `error ${err.message}`);
        if (got === 'one' || got === 'two') served[got]++;
        else failed.push(got ?? 'no body');
      }
    };
    const loop = Promise.all([here.url, here.url, other!.url, other!.url].map(client));
    // Back and forth: each edge retires the pool of the old target while requests are between their limit step (a
    // Redis round trip) and their forwarding.
    for (let i = 0; i < 10; i++) {
      const before = served.one + served.two;
      await here.gateway.routes.set(route(id, i % 2 === 0 ? two.url : one.url, `rev-${i + 2}`));
      await eventually(async () => expect(served.one + served.two).toBeGreaterThan(before + 20));
    }
    stop = true;
    await loop;
    expect(failed).toEqual([]);
    expect(served.one).toBeGreaterThan(0);
    expect(served.two).toBeGreaterThan(0);
  });
});
