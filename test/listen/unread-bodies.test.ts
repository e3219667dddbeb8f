import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Hono } from 'hono';
import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen, type Listening } from '../../src/listen/listen.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { rawRequest } from '../helpers/raw-http.ts';

/**
 * A body the server answered without reading (401, 404, an upstream that
 * answered first) must not hold the connection: the client's next request
 * on it is answered at once. It used to wait behind the unread bytes until
 * the client's timeout.
 */
const BIG = Buffer.alloc(2_000_000, 0x61);

/** POSTs BIG, then GETs on the same keep-alive connection; both answers within 3 s each. */
async function postThenGet(origin: string, path: string, headers: Record<string, string> = {}) {
  const client = new Client(origin, { pipelining: 1, connections: 1 } as never);
  try {
    const first = await client.request({
      path,
      method: 'POST',
      body: BIG,
      headers: { 'content-type': 'application/json', ...headers },
      headersTimeout: 3000,
      bodyTimeout: 3000,
    });
    const firstBody = await first.body.text();
    const second = await client.request({ path: '/next', method: 'GET', headersTimeout: 3000, bodyTimeout: 3000 });
    await second.body.text();
    return { first: first.statusCode, firstBody, firstHeaders: first.headers, second: second.statusCode };
  } finally {
    await client.close();
  }
}

describe('a service answers without reading the body', () => {
  let svc: Listening;
  beforeAll(async () => {
    const app = new Hono();
    app.post('/json', async (c) => c.json({ bytes: (await c.req.arrayBuffer()).byteLength }));
    app.post('/half', async (c) => {
      const reader = c.req.raw.body!.getReader(); // starts reading, then stops: the case Node does not clean up
      await reader.read();
      return c.json({ detail: 'Unauthorized' }, 401);
    });
    app.all('*', (c) => c.json({ detail: 'Not Found' }, 404));
    svc = await listen(app, 0, '127.0.0.1');
  });
  afterAll(() => svc.close());

  it.each(['/half', '/nope'])('POST %s: answered, and the next request on the connection too', async (path) => {
    const r = await postThenGet(svc.url, path);
    expect([r.first, r.second]).toEqual([path === '/half' ? 401 : 404, 404]);
    expect(r.firstHeaders.connection).not.toBe('close'); // the connection stays reusable
  });

  it('refuses a body larger than any service takes with a JSON 413, before reading it, and closes the connection', async () => {
    const r = await rawRequest(
      svc.port,
      `POST /json HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${17 * 1024 * 1024}\r\n\r\n`,
    );
    expect(r.status).toBe(413);
    expect(r.headers.connection).toEqual(['close']);
    expect(r.json()).toMatchObject({ code: 'body_too_large' });
  });

  it('reads the body whole for the app', async () => {
    const r = await postThenGet(svc.url, '/json');
    expect(JSON.parse(r.firstBody)).toEqual({ bytes: BIG.length });
  });
});

describe('through the edge', () => {
  let gw: TestGateway;
  beforeAll(async () => void (gw = await startTestGateway({ LOG_LEVEL: 'warn' })));
  afterAll(() => gw.close());

  it.each([
    ['/v2/deployments', 401, { 'x-api-key': 'not-a-key' }],
    ['/threads', 401, {}],
  ] as const)(
    'POST %s answered %i by the service: the next request on the connection is answered',
    async (path, status, headers) => {
      const r = await postThenGet(gw.url, path, headers);
      expect(r.first).toBe(status);
      expect(r.second).toBeLessThan(500);
    },
  );
});

describe('through the edge, to an upstream that answers before the body', () => {
  let upstream: Server, gw: TestGateway;
  beforeAll(async () => {
    // Not one of ours: answers at once and never reads the body (Node then discards it, or not, as it likes).
    upstream = createServer((req, res) => res.writeHead(req.method === 'POST' ? 401 : 200).end('{}'));
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    gw = await startTestGateway({ LOG_LEVEL: 'warn', AGENT_SERVER_URL: url, KEY_CHECK: 'off' });
  });
  afterAll(async () => {
    await gw.close();
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
  });

  it('the answer reaches the client, and its next request is answered', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await postThenGet(gw.url, '/threads');
      expect(r.first).toBe(401);
      expect(r.second).toBe(200);
    }
  });
});
