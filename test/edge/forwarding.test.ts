import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PassThrough } from 'node:stream';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPEN_RULES, rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { collect, connectRaw, head, rawRequest } from '../helpers/raw-http.ts';
import { closedPort, echoJson, startUpstream, type TestUpstream, type UpstreamHandler } from '../helpers/upstream.ts';
import { deferred, within } from '../helpers/async.ts';

/**
 * Streamed forwarding through the real edge to real upstreams. Limits are
 * out of the way (one rule, a million per second); every request carries its
 * own x-request-id so a test finds exactly its request at the upstream.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Upstream handlers by path; anything else gets `echoJson`. */
const routes = new Map<string, UpstreamHandler>();
let agent: TestUpstream;
let control: TestUpstream;
let rules: ReturnType<typeof rulesDir>;
/** Default settings. */
let main: TestGateway;
/** MAX_BODY=1KiB, UPSTREAM_TIMEOUT=300ms. */
let tight: TestGateway;

beforeAll(async () => {
  rules = rulesDir(OPEN_RULES);
  agent = await startUpstream((req, res) => (routes.get(new URL(req.url ?? '/', 'http://x').pathname) ?? echoJson)(req, res));
  control = await startUpstream();
  const upstreams = { RULES_DIR: rules.dir, AGENT_SERVER_URL: agent.url, CONTROL_PLANE_URL: control.url };
  main = await startTestGateway(upstreams);
  tight = await startTestGateway({ ...upstreams, MAX_BODY: '1KiB', UPSTREAM_TIMEOUT: '300ms' });
});

afterAll(async () => {
  rules?.remove();
  await Promise.all([main?.close(), tight?.close()]);
  await Promise.all([agent?.close(), control?.close()]);
});

const seenById = (up: TestUpstream, id: string) => up.seen.filter((r) => r.headers['x-request-id'] === id);



/** Reads `body` until the text received so far satisfies `done`. */
async function readUntil(body: AsyncIterator<Buffer>, received: { text: string }, done: (text: string) => boolean): Promise<void> {
  while (!done(received.text)) {
    const next = await body.next();
    if (next.done) throw new Error(`stream ended before the expected data; got ${JSON.stringify(received.text)}`);
    received.text += next.value.toString('utf8');
  }
}

function sse(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
}

describe('server-sent events', () => {
  it('the first frame reaches the client while the upstream is still writing', async () => {
    const order: string[] = [];
    const clientSawFirst = deferred();
    routes.set('/sse/ordered', async (_req, res) => {
      sse(res);
      res.write('id: 1\ndata: one\n\n');
      order.push('upstream wrote 1');
      await clientSawFirst.promise;
      res.write('id: 2\ndata: two\n\n');
      order.push('upstream wrote 2');
      res.end();
    });

    const res = await request(`${main.url}/sse/ordered`, { headers: { 'x-request-id': randomUUID() } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream');
    const body = res.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    const received = { text: '' };
    // The upstream holds frame 2 until the client has frame 1: an edge that buffers never delivers it.
    await within(readUntil(body, received, (t) => t.includes('data: one\n\n')), 3000, 'first SSE frame');
    order.push('client got 1');
    expect(received.text).not.toContain('two');
    clientSawFirst.resolve();
    await within(readUntil(body, received, (t) => t.includes('data: two\n\n')), 3000, 'second SSE frame');
    order.push('client got 2');
    expect(await body.next()).toMatchObject({ done: true });
    expect(order).toEqual(['upstream wrote 1', 'client got 1', 'upstream wrote 2', 'client got 2']);
    expect(received.text).toBe('id: 1\ndata: one\n\nid: 2\ndata: two\n\n');
  });

  it('the status and headers reach the client before the upstream writes its first frame', async () => {
    const clientSawHeaders = deferred();
    routes.set('/sse/quiet-start', async (_req, res) => {
      sse(res);
      res.flushHeaders();
      await clientSawHeaders.promise;
      res.end('data: late\n\n');
    });
    const res = await within(request(`${main.url}/sse/quiet-start`), 3000, 'response headers before any frame');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream');
    clientSawHeaders.resolve();
    expect(await res.body.text()).toBe('data: late\n\n');
  });

  it('an open stream idle longer than UPSTREAM_TIMEOUT (300 ms) after its headers is not cut', async () => {
    routes.set('/sse/idle', async (_req, res) => {
      sse(res);
      res.write('data: before\n\n');
      await new Promise((r) => setTimeout(r, 1000));
      res.write('data: after\n\n');
      res.end();
    });
    const res = await request(`${tight.url}/sse/idle`);
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('data: before\n\ndata: after\n\n');
  });

  it('a client that disconnects mid-stream aborts the upstream request', async () => {
    const upstreamClosed = deferred();
    let finished: boolean | undefined;
    routes.set('/sse/abandoned', (req, res) => {
      sse(res);
      res.write('data: first\n\n');
      const timer = setInterval(() => res.write(': keep-alive\n\n'), 5000);
      res.once('close', () => {
        clearInterval(timer);
        finished = res.writableFinished;
        upstreamClosed.resolve();
      });
      req.resume();
    });

    const id = randomUUID();
    const socket = await connectRaw(main.port);
    const firstFrame = new Promise<void>((resolve) => {
      let text = '';
      socket.on('data', (c: Buffer) => {
        text += c.toString('latin1');
        if (text.includes('data: first')) resolve();
      });
    });
    socket.write(head('GET /sse/abandoned HTTP/1.1', [['Host', 'edge.test'], ['x-request-id', id]]));
    await within(firstFrame, 3000, 'first frame');
    expect(seenById(agent, id)).toHaveLength(1);
    socket.destroy();
    await within(upstreamClosed.promise, 1000, 'upstream request closed after the client left');
    expect(finished).toBe(false); // cut, not ended
  });

  it('a client that disconnects before the upstream has answered aborts the upstream request', async () => {
    const upstreamClosed = deferred();
    const arrived = deferred();
    routes.set('/hang', (req, res) => {
      req.resume();
      arrived.resolve();
      const timer = setTimeout(() => res.end('too late'), 10_000);
      res.once('close', () => (clearTimeout(timer), upstreamClosed.resolve()));
    });
    const socket = await connectRaw(main.port);
    socket.write(head('GET /hang HTTP/1.1', [['Host', 'edge.test']]));
    await within(arrived.promise, 3000, 'request at the upstream');
    socket.destroy();
    await within(upstreamClosed.promise, 1000, 'upstream request closed after the client left');
  });
});

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
    for (const gone of ['x-foo', 'keep-alive', 'te', 'upgrade', 'proxy-connection', 'proxy-authorization']) expect(h[gone], gone).toBeUndefined();
    expect(String(h.connection ?? '')).not.toMatch(/x-foo|close/i);
    expect(h['x-kept']).toBe('end-to-end');
    expect(h['x-forwarded-for']).toBe('127.0.0.1');
    expect(h['x-forwarded-proto']).toBe('http');
    expect(h['x-forwarded-host']).toBe('public.example.test');
    expect(h['x-request-id']).toBe(minted);
    expect(h.host).toBe(`127.0.0.1:${agent.port}`);
    expect(seen!.url).toBe('/hop?q=1');
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
    const res = await rawRequest(main.port, head('GET /hop-response HTTP/1.1', [['Host', 'edge.test'], ['Connection', 'close']]));
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('ok');
    expect(res.headers['x-kept-response']).toEqual(['end-to-end']);
    for (const gone of ['x-bar', 'proxy-authenticate', 'upgrade']) expect(res.headers[gone], gone).toBeUndefined();
    expect(res.head).not.toMatch(/max=7|timeout=99|x-bar/i);
    expect(res.headers.connection).toEqual(['close']);
  });
});

describe('body limits (MAX_BODY=1KiB)', () => {
  /** Counts body bytes per request id, answering once the body ends. */
  const received = new Map<string, { bytes: number; ended: boolean }>();
  beforeAll(() => {
    routes.set('/upload', (req, res) => {
      const entry = { bytes: 0, ended: false };
      received.set(String(req.headers['x-request-id']), entry);
      req.on('data', (c: Buffer) => (entry.bytes += c.length));
      req.on('error', () => {});
      req.on('end', () => {
        entry.ended = true;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ bytes: entry.bytes }));
      });
    });
  });

  it('a Content-Length above MAX_BODY answers 413 JSON at once, before the body is sent, and the upstream never sees it', async () => {
    const id = randomUUID();
    const socket = await connectRaw(tight.port);
    const response = collect(socket);
    socket.write(head('POST /upload HTTP/1.1', [['Host', 'edge.test'], ['x-request-id', id], ['Content-Length', String(64 * 1024 * 1024)]]));
    socket.write(Buffer.alloc(100, 1)); // 100 of 64 MiB: the answer cannot wait for the rest
    const res = await response;
    expect(res.status).toBe(413);
    expect(res.json()).toEqual({ detail: expect.any(String), code: 'body_too_large' });
    expect(res.headers['content-type']?.[0]).toMatch(/^application\/json/);
    expect(res.headers.connection).toEqual(['close']);
    expect(seenById(agent, id)).toHaveLength(0);
  });

  it('a chunked body growing past MAX_BODY answers 413 JSON before it ends, and the upstream gets at most MAX_BODY of it', async () => {
    const id = randomUUID();
    const socket = await connectRaw(tight.port);
    const response = collect(socket);
    socket.write(head('POST /upload HTTP/1.1', [['Host', 'edge.test'], ['x-request-id', id], ['Transfer-Encoding', 'chunked']]));
    // 8 chunks of 512 bytes and no last chunk: the body never ends, so only the size can decide.
    for (let i = 0; i < 8; i++) socket.write(`200\r\n${'x'.repeat(512)}\r\n`);
    const res = await response;
    expect(res.status).toBe(413);
    expect(res.json()).toEqual({ detail: expect.any(String), code: 'body_too_large' });
    const got = received.get(id);
    expect(got?.bytes ?? 0).toBeLessThanOrEqual(1024);
    expect(got?.ended ?? false).toBe(false);
  });

  it('a body of exactly MAX_BODY passes, with Content-Length and chunked', async () => {
    for (const chunked of [false, true]) {
      const id = randomUUID();
      const body = Buffer.alloc(1024, 7);
      const res = chunked
        ? await rawRequest(
            tight.port,
            head('POST /upload HTTP/1.1', [['Host', 'edge.test'], ['x-request-id', id], ['Transfer-Encoding', 'chunked'], ['Connection', 'close']]),
            `400\r\n`,
            body,
            '\r\n0\r\n\r\n',
          )
        : await rawRequest(
            tight.port,
            head('POST /upload HTTP/1.1', [['Host', 'edge.test'], ['x-request-id', id], ['Content-Length', '1024'], ['Connection', 'close']]),
            body,
          );
      expect(res.status, chunked ? 'chunked' : 'content-length').toBe(200);
      expect(res.json()).toEqual({ bytes: 1024 });
    }
  });

  it('one byte over MAX_BODY with Content-Length is 413', async () => {
    const res = await rawRequest(
      tight.port,
      head('POST /upload HTTP/1.1', [['Host', 'edge.test'], ['Content-Length', '1025'], ['Connection', 'close']]),
      Buffer.alloc(1025, 7),
    );
    expect(res.status).toBe(413);
  });
});

describe('upstream failures', () => {
  it('an upstream that refuses connections answers 502 JSON {detail, code}', async () => {
    const port = await closedPort();
    const gw = await startTestGateway({ RULES_DIR: rules.dir, AGENT_SERVER_URL: `http://127.0.0.1:${port}`, CONTROL_PLANE_URL: control.url });
    try {
      const id = randomUUID();
      const res = await request(`${gw.url}/threads`, { method: 'POST', body: '{}', headers: { 'x-request-id': id, 'content-type': 'application/json' } });
      expect(res.statusCode).toBe(502);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.headers['x-request-id']).toBe(id);
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
      const res = await rawRequest(main.port, head(`GET ${path} HTTP/1.1`, [['Host', 'edge.test'], ['x-request-id', id], ['Connection', 'close']]));
      expect(res.status, path).toBe(200);
      const [hit, miss] = expected === 'control' ? [control, agent] : [agent, control];
      expect(seenById(hit, id).map((r) => r.url), path).toEqual([seenAs]);
      expect(seenById(miss, id), path).toHaveLength(0);
    }
  });

  it('an upstream URL with a base path is prepended to the forwarded path', async () => {
    const gw = await startTestGateway({ RULES_DIR: rules.dir, AGENT_SERVER_URL: `${agent.url}/base/`, CONTROL_PLANE_URL: control.url });
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

describe('large and streamed bodies', () => {
  beforeAll(() => {
    /** Streams the request body straight back as the response body. */
    routes.set('/mirror', (req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      req.pipe(res);
    });
  });

  it('a 5 MiB chunked POST arrives intact and streams back intact', async () => {
    const data = randomBytes(5 * 1024 * 1024);
    const sent = createHash('sha256').update(data).digest('hex');
    const body = new PassThrough();
    const responded = request(`${main.url}/mirror`, { method: 'POST', body, headers: { 'content-type': 'application/octet-stream' } });
    for (let at = 0; at < data.length; at += 64 * 1024) {
      if (!body.write(data.subarray(at, at + 64 * 1024))) await new Promise((r) => body.once('drain', r));
    }
    body.end();
    const res = await responded;
    expect(res.statusCode).toBe(200);
    const back = createHash('sha256');
    let bytes = 0;
    for await (const chunk of res.body) {
      back.update(chunk as Buffer);
      bytes += (chunk as Buffer).length;
    }
    expect(bytes).toBe(data.length);
    expect(back.digest('hex')).toBe(sent);
  });

  it('a 5 MiB POST with Content-Length arrives at the upstream byte for byte', async () => {
    const hashes = new Map<string, { bytes: number; sha256: string }>();
    routes.set('/hash', (req, res) => {
      const hash = createHash('sha256');
      let bytes = 0;
      req.on('data', (c: Buffer) => (hash.update(c), (bytes += c.length)));
      req.on('end', () => {
        hashes.set(String(req.headers['x-request-id']), { bytes, sha256: hash.digest('hex') });
        res.end('ok');
      });
    });
    const data = randomBytes(5 * 1024 * 1024);
    const id = randomUUID();
    const res = await request(`${main.url}/hash`, { method: 'POST', body: data, headers: { 'x-request-id': id } });
    expect(res.statusCode).toBe(200);
    await res.body.text();
    expect(hashes.get(id)).toEqual({ bytes: data.length, sha256: createHash('sha256').update(data).digest('hex') });
  });

  it('the request body is streamed: the upstream reads the first chunk before the client sends the second', async () => {
    const firstArrived = deferred();
    let total = 0;
    routes.set('/trickle', (req, res) => {
      req.on('data', (c: Buffer) => {
        total += c.length;
        firstArrived.resolve();
      });
      req.on('end', () => res.end(String(total)));
    });
    const body = new PassThrough();
    const responded = request(`${main.url}/trickle`, { method: 'POST', body });
    body.write(Buffer.alloc(1000, 1));
    await within(firstArrived.promise, 3000, 'first request chunk at the upstream');
    expect(total).toBe(1000);
    body.end(Buffer.alloc(500, 2));
    const res = await responded;
    expect(await res.body.text()).toBe('1500');
  });
});
