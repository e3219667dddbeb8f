import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { request } from 'undici';
import { beforeAll, describe, expect, it } from 'vitest';
import { forwardingSetup, seenById } from '../helpers/forwarding.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { collect, connectRaw, head, parseResponse, rawRequest } from '../helpers/raw-http.ts';
import { closedPort, type TestUpstream } from '../helpers/upstream.ts';
import { deferred, within } from '../helpers/async.ts';

/**
 * Forwarding through the real edge to real upstreams: header hygiene,
 * upstream failures (502, 504) and routing.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const setup = forwardingSetup();
const { routes } = setup;
let main: TestGateway, tight: TestGateway, agent: TestUpstream, control: TestUpstream;
beforeAll(() => void ({ main, tight, agent, control } = setup));

describe('headers', () => {
  it('hop-by-hop headers never reach the upstream; x-forwarded-* and x-request-id are set', async () => {
    const res = await rawRequest(
      main.port,
      head('GET /hop?q=1 HTTP/1.1', [
        ['Host', 'public.example.test'],
        ['Connection', 'close, X-Foo'],
        ['X-Foo', 'named-by-connection'],
        ['Keep-Alive', 'timeout=5'],
        ['TE', 'trailers'],
        ['Upgrade', 'websocket'],
        ['Proxy-Connection', 'keep-alive'],
        ['Proxy-Authorization', 'Basic Zm9vOmJhcg=='],
        ['X-Forwarded-For', '6.6.6.6'],
        ['X-Forwarded-Proto', 'https'],
        ['X-Forwarded-Host', 'spoofed.example.test'],
        ['X-Kept', 'end-to-end'],
      ]),
    );
    expect(res.status).toBe(200);
    const minted = res.headers['x-request-id']?.[0];
    expect(minted).toMatch(UUID);
    const [seen] = seenById(agent, minted!);
    expect(seen).toBeDefined();
    const h = seen!.headers;
    for (const gone of ['x-foo', 'keep-alive', 'te', 'upgrade', 'proxy-connection', 'proxy-authorization'])
      expect(h[gone], gone).toBeUndefined();
    expect(String(h.connection ?? '')).not.toMatch(/x-foo|close/i);
    expect(h['x-kept']).toBe('end-to-end');
    expect(h['x-forwarded-for']).toBe('127.0.0.1');
    expect(h['x-forwarded-proto']).toBe('http');
    expect(h['x-forwarded-host']).toBe('public.example.test');
    expect(h['x-request-id']).toBe(minted);
    expect(h.host).toBe(`127.0.0.1:${agent.port}`);
    expect(seen!.url).toBe('/hop?q=1');
  });

  it('Expect: 100-continue: the edge asks for the body itself, once the request is allowed, and the upstream gets it without Expect', async () => {
    const id = randomUUID();
    const body = 'x'.repeat(3000);
    const socket = await connectRaw(main.port);
    let received = '';
    socket.on('data', (c: Buffer) => (received += c.toString('latin1')));
    socket.write(
      head('POST /expecting HTTP/1.1', [
        ['Host', 'x'],
        ['Expect', '100-continue'],
        ['Content-Length', String(body.length)],
        ['X-Request-Id', id],
        ['Connection', 'close'],
      ]),
    );
    await within(
      (async () => {
        while (!received.includes('\r\n\r\n')) await new Promise((r) => setTimeout(r, 10));
      })(),
      3000,
      'an interim answer',
    );
    expect(received).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\n$/);
    const final = collect(socket);
    socket.write(body);
    const res = await final;
    expect(res.status).toBe(200);
    expect(res.json()).toMatchObject({ method: 'POST', url: '/expecting', bytes: body.length });
    const [seen] = seenById(agent, id);
    expect(seen!.headers.expect).toBeUndefined();
  });

  it('Expect: 100-continue on a body over MAX_BODY: 413 at once, no 100 Continue, the connection closed, nothing forwarded', async () => {
    const id = randomUUID();
    const data = await new Promise<Buffer>((resolve) => {
      void connectRaw(tight.port).then((socket) => {
        const chunks: Buffer[] = [];
        socket.on('data', (c: Buffer) => chunks.push(c));
        socket.on('close', () => resolve(Buffer.concat(chunks)));
        socket.write(
          head('POST /expecting HTTP/1.1', [
            ['Host', 'x'],
            ['Expect', '100-continue'],
            ['Content-Length', '5000'],
            ['X-Request-Id', id],
          ]),
        );
      });
    });
    expect(data.toString('latin1')).not.toContain('100 Continue');
    const res = parseResponse(data);
    expect(res.status).toBe(413);
    expect(res.headers.connection).toEqual(['close']);
    expect(seenById(agent, id)).toEqual([]);
  });

  it('hop-by-hop headers of the upstream response never reach the client', async () => {
    routes.set('/hop-response', (req, res) => {
      req.resume();
      res.writeHead(200, {
        Connection: 'X-Bar',
        'X-Bar': 'named-by-connection',
        'Keep-Alive': 'timeout=99, max=7',
        'Proxy-Authenticate': 'Basic realm="upstream"',
        Upgrade: 'h2c',
        'X-Kept-Response': 'end-to-end',
        'Content-Type': 'text/plain',
        'Content-Length': '2',
      });
      res.end('ok');
    });
    const res = await rawRequest(
      main.port,
      head('GET /hop-response HTTP/1.1', [
        ['Host', 'edge.test'],
        ['Connection', 'close'],
      ]),
    );
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('ok');
    expect(res.headers['x-kept-response']).toEqual(['end-to-end']);
    for (const gone of ['x-bar', 'proxy-authenticate', 'upgrade']) expect(res.headers[gone], gone).toBeUndefined();
    expect(res.head).not.toMatch(/max=7|timeout=99|x-bar/i);
    expect(res.headers.connection).toEqual(['close']);
  });
});

describe('upstream failures', () => {
  it('an upstream that refuses connections answers 502 JSON {detail, code}', async () => {
    const port = await closedPort();
    const gw = await startTestGateway({
      RULES_DIR: setup.rulesDir,
      AGENT_SERVER_URL: `http://127.0.0.1:${port}`,
      CONTROL_PLANE_URL: control.url,
    });
    try {
      const id = randomUUID();
      const res = await request(`${gw.url}/threads`, {
        method: 'POST',
        body: '{}',
        headers: { 'x-request-id': id, 'content-type': 'application/json' },
      });
      expect(res.statusCode).toBe(502);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.headers['x-request-id']).toBe(id);
      // The limit applied before the upstream failed: its headers are on the error too.
      expect(res.headers['ratelimit-policy']).toBe('"open.ip";q=1000000;w=1');
      expect(res.headers.ratelimit).toMatch(/^"open\.ip";r=\d+;t=\d+$/);
      const body = (await res.body.json()) as Record<string, unknown>;
      expect(body).toEqual({ detail: expect.any(String), code: 'upstream_unreachable' });
      expect(String(body.detail)).not.toMatch(/\n\s+at /); // no stack trace
      expect(await gw.logs.requestLine(id)).toMatchObject({ status: 502, upstream: 'agent-server' });
    } finally {
      await gw.close();
    }
  });

  it('an upstream whose headers come later than UPSTREAM_TIMEOUT (300 ms) answers 504 JSON, and the upstream request is aborted', async () => {
    const upstreamClosed = deferred();
    routes.set('/slow', (req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      const timer = setTimeout(() => res.end('too late'), 5000);
      res.once('close', () => (clearTimeout(timer), upstreamClosed.resolve()));
    });
    const started = performance.now();
    const res = await request(`${tight.url}/slow`);
    const elapsed = performance.now() - started;
    expect(res.statusCode).toBe(504);
    expect(res.headers['ratelimit-policy']).toBe('"open.ip";q=1000000;w=1');
    expect(await res.body.json()).toEqual({ detail: expect.any(String), code: 'upstream_timeout' });
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(3000);
    await within(upstreamClosed.promise, 1000, 'upstream request closed after the timeout');
  });
});

describe('routing', () => {
  it('/v2/... and /api-host/v2/... go to the control plane, every other path to the agent server', async () => {
    const cases: [path: string, upstream: 'control' | 'agent', seenAs: string][] = [
      ['/v2/deployments?limit=5', 'control', '/v2/deployments?limit=5'],
      ['/v2', 'control', '/v2'],
      ['/api-host/v2/deployments/abc', 'control', '/api-host/v2/deployments/abc'],
      ['/x/../v2/deployments', 'control', '/v2/deployments'],
      ['/v2x/deployments', 'agent', '/v2x/deployments'],
      ['/v1/deployments', 'agent', '/v1/deployments'],
      ['/api-host/v3/deployments', 'agent', '/api-host/v3/deployments'],
      ['/threads/t1/runs', 'agent', '/threads/t1/runs'],
      ['/', 'agent', '/'],
    ];
    for (const [path, expected, seenAs] of cases) {
      const id = randomUUID();
      const res = await rawRequest(
        main.port,
        head(`GET ${path} HTTP/1.1`, [
          ['Host', 'edge.test'],
          ['x-request-id', id],
          ['Connection', 'close'],
        ]),
      );
      expect(res.status, path).toBe(200);
      const [hit, miss] = expected === 'control' ? [control, agent] : [agent, control];
      expect(
        seenById(hit, id).map((r) => r.url),
        path,
      ).toEqual([seenAs]);
      expect(seenById(miss, id), path).toHaveLength(0);
    }
  });

  it('an upstream URL with a base path is prepended to the forwarded path', async () => {
    const gw = await startTestGateway({
      RULES_DIR: setup.rulesDir,
      AGENT_SERVER_URL: `${agent.url}/base/`,
      CONTROL_PLANE_URL: control.url,
    });
    try {
      const id = randomUUID();
      const res = await request(`${gw.url}/threads?x=1`, { headers: { 'x-request-id': id } });
      await res.body.text();
      expect(res.statusCode).toBe(200);
      expect(seenById(agent, id).map((r) => r.url)).toEqual(['/base/threads?x=1']);
    } finally {
      await gw.close();
    }
  });
});
