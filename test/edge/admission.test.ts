import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { openClient, startWsUpstream, type WsUpstream } from '../helpers/ws-upstream.ts';

/**
 * One admission for HTTP requests and WebSocket upgrades (issue 35, item 5; src/edge/admission.ts): the same
 * request refused over either answers the same status and body. A deployment that exists but is not served now
 * answered 503 over HTTP and 404 to an upgrade.
 */
let up: WsUpstream;
let gw: TestGateway;
const ids = { served: randomUUID(), starting: randomUUID(), failed: randomUUID(), unknown: randomUUID() };

beforeAll(async () => {
  up = await startWsUpstream();
  gw = await startTestGateway({ AGENT_SERVER_URL: up.url, CONTROL_PLANE_URL: up.url });
  const route = (deploymentId: string, unavailable?: 'starting' | 'failed') => ({
    deploymentId,
    revisionId: 'rev-1',
    tenantId: 'acme',
    target: up.url,
    ...(unavailable && { unavailable }),
  });
  await gw.gateway.routes.set(route(ids.served));
  await gw.gateway.routes.set(route(ids.starting, 'starting'));
  await gw.gateway.routes.set(route(ids.failed, 'failed'));
});
afterAll(async () => {
  await gw?.close();
  await up?.close();
});

interface Answer {
  status: number;
  body: unknown;
}

async function overHttp(path: string, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await request(`${gw.url}${path}`, { headers: { 'x-api-key': `key-${randomUUID()}`, ...headers } });
  return { status: res.statusCode, body: await res.body.json() };
}

async function overUpgrade(path: string, headers: Record<string, string> = {}): Promise<Answer> {
  try {
    const ws = await openClient(`${gw.url}${path}`, { 'x-api-key': `key-${randomUUID()}`, ...headers });
    ws.close();
    return { status: 101, body: null };
  } catch (err) {
    const refused = err as { status?: number; body?: string };
    if (refused.status === undefined) throw err;
    return { status: refused.status, body: JSON.parse(refused.body!) as unknown };
  }
}

describe('the same refusal over HTTP and over a WebSocket upgrade', () => {
  const path = (id: string) => `/deployments/${id}/threads/${randomUUID()}/stream/events`;

  it('a deployment that is starting: 503, the same body', async () => {
    const http = await overHttp(path(ids.starting));
    const upgrade = await overUpgrade(path(ids.starting));
    expect(http.status).toBe(503);
    expect(upgrade).toEqual(http);
    expect(JSON.stringify(http.body)).toContain(`Deployment ${ids.starting} is starting`);
  });

  it('a deployment whose revision could not be started again: 503, the same body', async () => {
    const http = await overHttp(path(ids.failed));
    expect(http.status).toBe(503);
    expect(await overUpgrade(path(ids.failed))).toEqual(http);
  });

  it('an unknown deployment: 404, the same body', async () => {
    const http = await overHttp(path(ids.unknown));
    expect(http.status).toBe(404);
    expect(await overUpgrade(path(ids.unknown))).toEqual(http);
  });

  it('a path that escapes: 400, the same body', async () => {
    const http = await overHttp('/threads/a%2Fb/stream/events');
    expect(http.status).toBe(400);
    expect(await overUpgrade('/threads/a%2Fb/stream/events')).toEqual(http);
  });

  it('an identity header too long: 400, the same body', async () => {
    const headers = { 'x-user-id': 'u'.repeat(300) };
    const http = await overHttp(path(ids.served), headers);
    expect(http.status).toBe(400);
    expect(await overUpgrade(path(ids.served), headers)).toEqual(http);
  });

  it('a served deployment: upgraded', async () => {
    expect((await overUpgrade(path(ids.served))).status).toBe(101);
  });
});
