import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { deleteByPrefix } from '../../helpers/redis-keys.ts';
import { SHARED_REDIS_URL, sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';
import { client, imageBody, startControlPlane, type TestControlPlane } from './helpers.ts';

/**
 * Issue 35, item 9: on a Redis that cannot give each deployment a user of its own (the shared test server: its default
 * user needs no password), another organisation's deployment was accepted (201) and then failed its build with a
 * message about the operator's Redis. It is refused at create (409, the body saying what the operator must change),
 * nothing stored; the organisation "default" and, with TRUST_ALL_TENANTS=1, every organisation are accepted; the
 * operator reads it at start in one log line.
 */
const RUN = uniquePrefix('test:cp-foreign-org');
const DATA = `test-foreign-org-${randomUUID().slice(0, 8)}`;
const redis = sharedRedis();
const opened: TestControlPlane[] = [];

afterAll(async () => {
  await Promise.all(opened.map((t) => t.close()));
  await deleteByPrefix(redis, RUN);
  await deleteByPrefix(redis, DATA);
  await redis.quit();
});

async function controlPlane(label: string, extra: Record<string, string> = {}): Promise<TestControlPlane> {
  const t = await startControlPlane(
    {
      REDIS_URL: SHARED_REDIS_URL,
      CONTROL_PLANE_PREFIX: `${RUN}:${label}:cp`,
      API_KEYS_PREFIX: `${RUN}:${label}:keys`,
      ROUTES_PREFIX: `${RUN}:${label}:routes`,
      DEPLOYMENT_DATA_PREFIX: `${DATA}-${label}`,
      // Nothing here is about builds: none starts before the test ends.
      BUILD_DELAY_SECONDS: '60',
      ...extra,
    },
    { host: undefined },
  );
  opened.push(t);
  return t;
}

describe("another organisation's deployment on a Redis that cannot keep it apart", { timeout: 60_000 }, () => {
  it('is refused at create with 409 saying what the operator must change, and nothing is stored', async () => {
    const t = await controlPlane('refused');
    const api = client(t.url, await t.tenant());
    const res = await api.post('/deployments', imageBody());
    expect(res.status).toBe(409);
    expect(Object.keys(res.json)).toEqual(['detail']);
    expect(res.json.detail).toMatch(/^Deployments of this workspace's organisation cannot run here: /);
    expect(res.json.detail).toContain('needs no password');
    expect(res.json.detail).toContain('requirepass');
    expect(res.json.detail).toContain('TRUST_ALL_TENANTS=1');
    expect((await api.get('/deployments')).json.resources).toEqual([]);
    // The operator read it at start: one line, what to change.
    const said = t.logs.lines().filter((l) => l.redis === 'shared');
    expect(said).toHaveLength(1);
    expect(String(said[0]!.msg)).toMatch(/only deployments of the organisation "default" are accepted; .*requirepass/);
  });

  it('accepts the organisation "default"', async () => {
    const t = await controlPlane('default');
    const workspace = `ws-default-${Date.now()}`;
    await t.cp.keys.addWorkspace('default', workspace);
    const api = client(t.url, { workspace, key: (await t.cp.keys.createKey('default')).key });
    expect((await api.post('/deployments', imageBody())).status).toBe(201);
  });

  it('accepts every organisation with TRUST_ALL_TENANTS=1', async () => {
    const t = await controlPlane('trusting', { TRUST_ALL_TENANTS: '1' });
    const api = client(t.url, await t.tenant());
    expect((await api.post('/deployments', imageBody())).status).toBe(201);
  });
});
