import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { route } from '../routing/contract.ts';
import { startDeployment, type TestDeployment } from '../helpers/deployment-upstream.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';

/**
 * Deployments through the real edge: the shipped US rules, the memory store, a route table the test writes (standing
 * in for the control plane), and real servers on port 0 standing in for the deployments' Agent Server processes.
 */

const DOMAIN = 'deploy.test';
let gw: TestGateway, agent: TestUpstream, control: TestUpstream, one: TestDeployment, two: TestDeployment;
const ids = { one: randomUUID(), two: randomUUID() };

beforeAll(async () => {
  [agent, control, one, two] = await Promise.all([
    startUpstream(),
    startUpstream(),
    startDeployment('one'),
    startDeployment('two'),
  ]);
  gw = await startTestGateway({
    AGENT_SERVER_URL: agent.url,
    CONTROL_PLANE_URL: control.url,
    DEPLOYMENTS_DOMAIN: DOMAIN,
  });
  await gw.gateway.routes.set(route(ids.one, one.url));
  await gw.gateway.routes.set(route(ids.two, two.url));
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([agent, control, one, two].map((u) => u?.close()));
});

async function send(path: string, init: { method?: string; headers?: Record<string, string> } = {}) {
  const res = await request(`${gw.url}${path}`, {
    method: (init.method ?? 'GET') as 'GET',
    headers: { 'x-request-id': randomUUID(), 'x-api-key': `key-${randomUUID()}`, ...init.headers },
  });
  return { status: res.statusCode, headers: res.headers, body: (await res.body.json()) as Record<string, unknown> };
}

describe('path form: /deployments/{id}', () => {
  it('reaches that deployment with the prefix stripped, the query kept, and the prefix in X-Forwarded-Prefix', async () => {
    const res = await send(`/deployments/${ids.one}/threads/search?limit=2`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ server: 'one', method: 'POST', url: '/threads/search?limit=2' });
    const seen = one.seen.at(-1)!;
    expect(seen.headers['x-forwarded-prefix']).toBe(`/deployments/${ids.one}`);
    expect((await send(`/deployments/${ids.two}/assistants/search`, { method: 'POST' })).body.server).toBe('two');
  });

  it('the deployment root: /deployments/{id} and /deployments/{id}/ are its "/"', async () => {
    expect((await send(`/deployments/${ids.one}`)).body).toMatchObject({ server: 'one', url: '/' });
    expect((await send(`/deployments/${ids.one}/?q=1`)).body).toMatchObject({ server: 'one', url: '/?q=1' });
  });

  it('the rules match the stripped path: {url}/runs/query is the runs-query rule, and answers 429 when spent', async () => {
    const key = `key-${randomUUID()}`;
    const path = `/deployments/${ids.one}/runs/query`;
    const before = one.seen.length;
    const first = await send(path, { method: 'POST', headers: { 'x-api-key': key } });
    expect(first.status).toBe(200);
    expect(first.headers['ratelimit-policy']).toMatch(/^"runs-query\.api-key";q=15;w=10/);
    expect(first.headers['ratelimit']).toMatch(/^"runs-query\.api-key";r=14;t=1/);
    for (let i = 0; i < 14; i++)
      expect((await send(path, { method: 'POST', headers: { 'x-api-key': key } })).status).toBe(200);
    const denied = await send(path, { method: 'POST', headers: { 'x-api-key': key } });
    expect(denied.status).toBe(429);
    expect(denied.body).toMatchObject({ detail: 'Rate limit exceeded', rule: 'runs-query' });
    expect(denied.headers['ratelimit']).toMatch(/^"runs-query\.api-key";r=0;t=\d+/);
    expect(denied.headers['retry-after']).toMatch(/^\d+$/);
    expect(one.seen.length - before).toBe(15); // the denied one never reached the deployment
    // The same key on another deployment shares the bucket: a key's limits are the key's, wherever it goes.
    expect(
      (await send(`/deployments/${ids.two}/runs/query`, { method: 'POST', headers: { 'x-api-key': key } })).status,
    ).toBe(429);
  });

  it('a path that climbs out of the prefix is normalised first: /deployments/{one}/../{two}/x is deployment two', async () => {
    const res = await request(`${gw.url}/deployments/${ids.one}/%2e%2e/${ids.two}/x`);
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toMatchObject({ server: 'two', url: '/x' });
  });
});

describe('host form: {id}.DEPLOYMENTS_DOMAIN', () => {
  it('reaches the deployment by Host (any port, any case), the whole path as sent', async () => {
    const res = await send('/threads/search', {
      method: 'POST',
      headers: { host: `${ids.two}.${DOMAIN.toUpperCase()}:443` },
    });
    expect(res.body).toEqual({ server: 'two', method: 'POST', url: '/threads/search' });
    expect(two.seen.at(-1)!.headers['x-forwarded-prefix']).toBeUndefined();
    const limited = await send('/runs/query', { method: 'POST', headers: { host: `${ids.two}.${DOMAIN}` } });
    expect(limited.headers['ratelimit-policy']).toMatch(/^"runs-query\.api-key"/);
  });

  it('the domain itself and other hosts are not deployments: /v2 to the control plane, the rest to the default one', async () => {
    expect((await send('/threads/search', { method: 'POST', headers: { host: DOMAIN } })).body.url).toBe(
      '/threads/search',
    );
    expect(agent.seen.at(-1)!.url).toBe('/threads/search');
    await send('/v2/deployments', { headers: { host: `${ids.one}.elsewhere.test` } });
    expect(control.seen.at(-1)!.url).toBe('/v2/deployments');
  });

  it('an unknown deployment by host answers 404 naming it', async () => {
    const id = randomUUID();
    const res = await send('/info', { headers: { host: `${id}.${DOMAIN}` } });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Deployment ${id} not found`, code: 'deployment_not_found' });
  });
});

describe('unknown and deleted deployments', () => {
  it('answer 404 JSON naming the deployment, counted by the rules (RateLimit headers), never forwarded', async () => {
    const id = randomUUID();
    const seen = [agent, control, one, two].map((u) => u.seen.length);
    const res = await send(`/deployments/${id}/runs/query`, { method: 'POST' });
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.body).toEqual({ detail: `Deployment ${id} not found`, code: 'deployment_not_found' });
    expect(res.headers['ratelimit']).toMatch(/^"runs-query\.api-key";r=14/);
    expect([agent, control, one, two].map((u) => u.seen.length)).toEqual(seen);
  });

  it('a name that is no deployment id is not echoed; /deployments and /deployments/ name none', async () => {
    for (const path of ['/deployments', '/deployments/', '/deployments/%22%3Cscript%3E/x', `/deployments/-x/info`]) {
      const res = await send(path);
      expect(res.status, path).toBe(404);
      expect(res.body, path).toEqual({ detail: 'Deployment not found', code: 'deployment_not_found' });
    }
  });

  it('a deleted deployment answers 404 at once; set again, it is served again', async () => {
    const id = randomUUID();
    await gw.gateway.routes.set(route(id, one.url));
    expect((await send(`/deployments/${id}/info`)).status).toBe(200);
    await gw.gateway.routes.delete(id);
    expect((await send(`/deployments/${id}/info`)).status).toBe(404);
    await gw.gateway.routes.set(route(id, two.url));
    expect((await send(`/deployments/${id}/info`)).body.server).toBe('two');
  });

  it('a deployment whose process is gone answers 502 naming the deployment', async () => {
    const id = randomUUID();
    const gone = await startDeployment('gone');
    await gone.close();
    await gw.gateway.routes.set(route(id, gone.url));
    const res = await send(`/deployments/${id}/info`);
    expect(res.status).toBe(502);
    expect(res.body.detail).toContain(`deployment ${id}`);
  });
});

describe('everything else as before', () => {
  it('/v2 and /api-host/v2 reach the control plane, other paths the default deployment', async () => {
    await send('/v2/deployments');
    expect(control.seen.at(-1)!.url).toBe('/v2/deployments');
    await send('/api-host/v2/deployments');
    expect(control.seen.at(-1)!.url).toBe('/api-host/v2/deployments');
    await send('/deploymentsX/info');
    expect(agent.seen.at(-1)!.url).toBe('/deploymentsX/info');
  });
});

describe('the request log and the addressing', () => {
  it("names the deployment of a request (by path or host); metrics keep one 'deployment' upstream label", async () => {
    const requestId = randomUUID();
    await request(`${gw.url}/deployments/${ids.one}/info`, { headers: { 'x-request-id': requestId } }).then((r) =>
      r.body.dump(),
    );
    const line = await gw.logs.requestLine(requestId);
    expect(line).toMatchObject({ path: `/deployments/${ids.one}/info`, upstream: 'deployment', deployment: ids.one });
    const metrics = await (await request(`http://127.0.0.1:${gw.gateway.admin.port}/metrics`)).body.text();
    expect(metrics).toMatch(/gateway_upstream_duration_seconds_count\{upstream="deployment",status="200"\} \d+/);
    expect(metrics).not.toContain(ids.one);
  });

  it('PUBLIC_URL defaults to the edge address; the domain is DEPLOYMENTS_DOMAIN', () => {
    expect(gw.gateway.addressing()).toEqual({ publicUrl: `http://localhost:${gw.port}`, domain: DOMAIN });
  });
});
