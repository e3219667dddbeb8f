import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { deferred, within } from '../helpers/async.ts';
import { rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { metricValue, scrapeMetrics, waitForMetric } from '../helpers/scrape-metrics.ts';
import { closed, echo, nextMessage, openClient, startWsUpstream, type WsUpstream } from '../helpers/ws-upstream.ts';

/**
 * WebSockets through the real edge to a real `ws` upstream: frames pass unbuffered both ways, the upgrade is limited
 * like any request (429 with RateLimit headers), the upstream sees the edge's header hygiene, sockets count in the
 * metrics, and an idle socket is closed (1001).
 */

const rules = rulesDir(`
- id: held
  match: { method: GET, template: "/held/{id}" }
  limits:
    - { by: api-key, concurrent: 1, category: Sockets open }
- id: sockets
  match: { method: GET, template: "/threads/{id}/stream/events" }
  limits:
    - { by: api-key, count: 2, per: 3600s, category: WebSocket open }
- id: open
  limits:
    - { by: ip, count: 1000000, per: 1s, category: Test }
`);
let up: WsUpstream;
let gw: TestGateway;

beforeAll(async () => {
  up = await startWsUpstream();
  gw = await startTestGateway({
    AGENT_SERVER_URL: up.url,
    CONTROL_PLANE_URL: up.url,
    RULES_DIR: rules.dir,
    WEBSOCKET_IDLE_TIMEOUT: '1500ms',
  });
});
afterAll(async () => {
  await gw?.close();
  await up?.close();
  rules.remove();
});

const thread = () => `/threads/${randomUUID()}/stream/events`;

describe('WebSockets through the edge', () => {
  it('a frame reaches the other side before the next is sent, both ways (nothing buffered)', async () => {
    const upstreamGotFirst = deferred();
    const clientGotFirst = deferred();
    up.onConnection = (ws: WebSocket) => {
      ws.on('message', (data) => {
        if (String(data) === 'c1') upstreamGotFirst.resolve();
      });
      ws.send('s1');
      // The upstream's second frame waits until the client has its first: an edge that buffered would hang here.
      void clientGotFirst.promise.then(() => ws.send('s2'));
    };
    const ws = await openClient(`${gw.url}${thread()}`, { 'x-api-key': `k-${randomUUID()}` });
    expect(await within(nextMessage(ws), 3000, 'first upstream frame')).toBe('s1');
    const second = nextMessage(ws);
    clientGotFirst.resolve();
    expect(await within(second, 3000, 'second upstream frame')).toBe('s2');
    ws.send('c1');
    await within(upstreamGotFirst.promise, 3000, 'first client frame at the upstream');
    ws.close();
    up.onConnection = echo;
  });

  it('echoes text and binary messages, large and fragmented ones too, unchanged', async () => {
    const ws = await openClient(`${gw.url}${thread()}`, { 'x-api-key': `k-${randomUUID()}` });
    ws.send('hello');
    expect(await nextMessage(ws)).toBe('hello');
    const big = 'x'.repeat(300_000);
    ws.send(big);
    expect(await nextMessage(ws)).toBe(big);
    ws.send('frag-', { fin: false });
    ws.send('ment', { fin: true });
    expect(await nextMessage(ws)).toBe('frag-ment');
    const bin = await new Promise<Buffer>((resolve) => {
      ws.once('message', (d) => resolve(d as Buffer));
      ws.send(Buffer.from([0, 1, 2, 255]), { binary: true });
    });
    expect([...bin]).toEqual([0, 1, 2, 255]);
    ws.close();
    expect((await closed(ws)).code).toBe(1005);
  });

  it('the upstream sees the header hygiene of an HTTP request, and no extension is negotiated', async () => {
    const requestId = `ws-${randomUUID()}`;
    const ws = await openClient(
      `${gw.url}${thread()}`,
      {
        'x-api-key': `k-${randomUUID()}`,
        'x-request-id': requestId,
        'x-forwarded-for': '6.6.6.6',
        'x-gateway-internal': 'forged',
      },
      { perMessageDeflate: true },
    );
    const seen = up.upgrades.find((u) => u.headers['x-request-id'] === requestId)!;
    expect(seen.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(seen.headers['x-gateway-internal']).toBeUndefined();
    expect(seen.headers['sec-websocket-extensions']).toBeUndefined();
    expect(seen.headers.upgrade).toBe('websocket');
    expect(ws.extensions).toBe('');
    ws.close();
  });

  it('the 101 carries the RateLimit headers; over the limit the upgrade answers 429 with them and never reaches the upstream', async () => {
    const key = `k-${randomUUID()}`;
    const upgradesBefore = up.upgrades.length;
    const opened: WebSocket[] = [];
    for (let i = 0; i < 2; i++) {
      const ws = await openClient(`${gw.url}${thread()}`, { 'x-api-key': key });
      opened.push(ws);
    }
    expect(up.upgrades.length).toBe(upgradesBefore + 2);
    const refused = await openClient(`${gw.url}${thread()}`, { 'x-api-key': key }).then(
      () => null,
      (err: { status: number; headers: Record<string, string>; body: string }) => err,
    );
    expect(refused?.status).toBe(429);
    expect(refused?.headers['ratelimit-policy']).toBe('"sockets.api-key";q=2;w=3600');
    expect(refused?.headers.ratelimit).toMatch(/^"sockets.api-key";r=0;t=\d+$/);
    expect(Number(refused?.headers['retry-after'])).toBeGreaterThan(0);
    expect(JSON.parse(refused!.body)).toMatchObject({ detail: 'Rate limit exceeded', rule: 'sockets' });
    expect(up.upgrades.length).toBe(upgradesBefore + 2);
    for (const ws of opened) ws.close();
  });

  it("a key offered as the subprotocol (a browser's way) is counted as that key: its limit holds for browsers too", async () => {
    const key = `k-${randomUUID()}`;
    const asBrowser = (headers: Record<string, string> = {}) =>
      openClient(`${gw.url}${thread()}`, headers, { protocols: ['x-api-key', key] });
    const before = up.upgrades.length;
    const opened = [await asBrowser(), await openClient(`${gw.url}${thread()}`, { 'x-api-key': key })];
    const refused = await asBrowser().then(
      () => null,
      (err: { status: number; headers: Record<string, string> }) => err,
    );
    expect(refused?.status).toBe(429);
    expect(refused?.headers.ratelimit).toMatch(/^"sockets.api-key";r=0;t=\d+$/);
    // The upstream gets the handshake as sent: the key stays in the subprotocol, no header is added.
    const seen = up.upgrades[before]!;
    expect(seen.headers['x-api-key']).toBeUndefined();
    expect(seen.headers['sec-websocket-protocol']).toBe(`x-api-key,${key}`);
    expect(up.upgrades.length).toBe(before + 2);
    for (const ws of opened) ws.close();
  });

  it('an in-flight limit counts open sockets: a slot is held while the socket is open and comes back when it closes', async () => {
    const key = `k-${randomUUID()}`;
    const url = () => `${gw.url}/held/${randomUUID()}`;
    const refusedStatus = () =>
      openClient(url(), { 'x-api-key': key }).then(
        (ws) => {
          ws.close();
          return 101;
        },
        (err: { status: number; headers: Record<string, string> }) => {
          expect(err.headers['ratelimit-policy']).toBe('"held.api-key";q=1;qu="concurrent-requests"');
          return err.status;
        },
      );
    const first = await openClient(url(), { 'x-api-key': key });
    expect(await refusedStatus()).toBe(429);
    first.close();
    await closed(first);
    // The edge sees the close a moment after the client: the slot comes back then, not never.
    let status = 429;
    for (let i = 0; i < 100 && status === 429; i++) {
      status = await refusedStatus();
      if (status === 429) await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).toBe(101);
  });

  it('the 101 answer carries RateLimit-Policy, RateLimit and the request id', async () => {
    const { WebSocket } = await import('ws');
    const ws = new WebSocket(`${gw.url.replace('http', 'ws')}${thread()}`, {
      headers: { 'x-api-key': `k-${randomUUID()}`, 'x-request-id': 'ws-head-check' },
    });
    const opened = new Promise((resolve) => ws.once('open', resolve));
    const headers = await new Promise<Record<string, string | string[] | undefined>>((resolve, reject) => {
      ws.once('upgrade', (res) => resolve(res.headers));
      ws.once('error', reject);
    });
    await opened;
    expect(headers['ratelimit-policy']).toBe('"sockets.api-key";q=2;w=3600');
    expect(headers.ratelimit).toBe('"sockets.api-key";r=1;t=1800');
    expect(headers['x-request-id']).toBe('ws-head-check');
    ws.close();
  });

  it('an upstream that refuses the upgrade is answered as it answered', async () => {
    up.refuse.set('/threads/refused', 403);
    const err = await openClient(`${gw.url}/threads/refused/stream/events`, { 'x-api-key': `k-${randomUUID()}` }).then(
      () => null,
      (e: { status: number; body: string }) => e,
    );
    expect(err?.status).toBe(403);
    expect(err?.body).toBe('refused');
  });

  it('open sockets count in the metrics (gauge and total), and an idle socket is closed with 1001', async () => {
    const ws = await openClient(`${gw.url}${thread()}`, { 'x-api-key': `k-${randomUUID()}` });
    const admin = gw.gateway.admin.port;
    const during = await scrapeMetrics(admin);
    expect(metricValue(during, 'gateway_websockets_open')).toBeGreaterThanOrEqual(1);
    expect(metricValue(during, 'gateway_websockets_total', { result: 'upgraded' })).toBeGreaterThanOrEqual(1);
    // WEBSOCKET_IDLE_TIMEOUT=1500ms: nothing is sent either way.
    const { code, reason } = await within(closed(ws), 10_000, 'idle close');
    expect(code).toBe(1001);
    expect(reason).toBe('idle timeout');
    expect(await waitForMetric(admin, 'gateway_websockets_open', {}, (v) => v === 0, { timeoutMs: 5000 })).toBe(0);
  });
});
