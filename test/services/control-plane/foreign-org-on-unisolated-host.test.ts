import { afterAll, describe, expect, it } from 'vitest';
import { client, imageBody, startControlPlane, type TestControlPlane } from './helpers.ts';

/**
 * Issue 35, item 9, its host half: on a host that cannot keep a deployment apart (here SANDBOX=off: no sandbox, no
 * network of its own), another organisation's deployment was accepted (201) and then failed its build saying so. It is
 * refused at create (409 naming what the operator must change, nothing stored); the organisation "default", and every
 * organisation with TRUST_ALL_TENANTS=1, are accepted. Records in memory: nothing here needs Redis.
 */
const opened: TestControlPlane[] = [];

afterAll(async () => {
  await Promise.all(opened.map((t) => t.close()));
});

async function controlPlane(extra: Record<string, string> = {}): Promise<TestControlPlane> {
  const t = await startControlPlane({ SANDBOX: 'off', BUILD_DELAY_SECONDS: '60', ...extra }, { host: undefined });
  opened.push(t);
  return t;
}

describe("another organisation's deployment on a host that cannot keep it apart", { timeout: 60_000 }, () => {
  it('is refused at create with 409 saying what the operator must change, and nothing is stored', async () => {
    const t = await controlPlane();
    const api = client(t.url, await t.tenant());
    const res = await api.post('/deployments', imageBody());
    expect(res.status).toBe(409);
    expect(res.json.detail).toMatch(/^Deployments of this workspace's organisation cannot run here: /);
    expect(res.json.detail).toContain('SANDBOX');
    expect(res.json.detail).toContain('TRUST_ALL_TENANTS=1');
    expect((await api.get('/deployments')).json.resources).toEqual([]);
  });

  it('accepts the organisation "default", and every organisation with TRUST_ALL_TENANTS=1', async () => {
    const t = await controlPlane();
    const workspace = `ws-default-${Date.now()}`;
    await t.cp.keys.addWorkspace('default', workspace);
    const own = client(t.url, { workspace, key: (await t.cp.keys.createKey('default')).key });
    expect((await own.post('/deployments', imageBody())).status).toBe(201);
    const trusting = await controlPlane({ TRUST_ALL_TENANTS: '1' });
    expect((await client(trusting.url, await trusting.tenant()).post('/deployments', imageBody())).status).toBe(201);
  });
});
