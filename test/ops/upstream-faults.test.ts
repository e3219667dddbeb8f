import { createServer, get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildConnector, Pool, request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError, writeError } from '../../src/errors.ts';
import { forward, type Forwarding, type Upstream } from '../../src/proxy/forward.ts';
import { OPEN_RULES, rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { sleep, startLoad, statusCounts, type Sample } from '../helpers/load.ts';
import { metricValue, scrapeMetrics } from '../helpers/scrape-metrics.ts';
import { spawnUpstream, type UpstreamProcess } from '../helpers/upstream-process.ts';
import { closedPort, echoJson, startUpstream, type TestUpstream, type UpstreamHandler } from '../helpers/upstream.ts';
import { deferred, within } from '../helpers/async.ts';

/**
 * Upstream faults through the real edge: an upstream process killed under
 * load and started again on its port, an upstream too slow to answer, an
 * upstream that drops an event stream halfway, and connections refused.
 * Limits are out of the way (one rule, a million per second per IP).
 */

let rules: ReturnType<typeof rulesDir>;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(() => {
  rules = rulesDir(OPEN_RULES);
});

afterEach(async () => {
  // In reverse order of start: gateways before the upstreams they use; processes by pid.
  for (const c of cleanups.splice(0).reverse()) await c();
});

afterAll(() => rules?.remove());

async function gateway(env: Record<string, string>): Promise<TestGateway> {
  const gw = await startTestGateway({ RULES_DIR: rules.dir, DRAIN_SECONDS: '0', ...env });
  cleanups.push(() => gw.close());
  return gw;
}

async function upstreamProcess(name: string, port?: number): Promise<UpstreamProcess> {
  const up = await spawnUpstream(name, port);
  cleanups.push(() => up.kill());
  return up;
}

async function inProcessUpstream(handler: UpstreamHandler): Promise<TestUpstream> {
  const up = await startUpstream(handler);
  cleanups.push(() => up.close());
  return up;
}

function expectJsonError(s: Pick<Sample, 'status' | 'body' | 'id'>, status: number, code: string): void {
  expect(s.status, s.id).toBe(status);
  expect(JSON.parse(s.body ?? 'null'), s.id).toEqual({ detail: expect.any(String), code });
}

/** `forward()` as the edge calls it, its rejection answered as the edge answers it (JSON with the error's status). */
function forwardOrAnswer(to: Omit<Forwarding, 'extraHeaders'>): void {
  forward({ ...to, extraHeaders: {} }, { headersTimeoutMs: 5000, maxBodyBytes: 1024 }).catch((err: unknown) => {
    writeError(to.res, err instanceof GatewayError ? err : new GatewayError('internal_error', String(err)));
  });
}

describe('an upstream killed under load', () => {
  it('its new requests answer 502 JSON while the other upstream keeps serving; started again on its port, traffic flows again', async () => {
    const agent = await upstreamProcess('agent-server');
    const control = await upstreamProcess('control-plane');
    const gw = await gateway({ AGENT_SERVER_URL: agent.url, CONTROL_PLANE_URL: control.url });
    const load = startLoad({
      url: gw.url,
      workers: 20,
      request: (w) => ({ path: w % 2 === 0 ? '/threads' : '/v2/deployments' }),
    });
    await sleep(800);
    await within(agent.kill(), 3000, 'agent upstream exit after SIGKILL');
    const goneAt = performance.now();
    await sleep(1000);
    const samples = await load.stop();

    const toAgent = samples.filter((s) => s.path === '/threads');
    const toControl = samples.filter((s) => s.path === '/v2/deployments');
    console.info(
      `[upstream kill] agent ${JSON.stringify(statusCounts(toAgent))}, control ${JSON.stringify(statusCounts(toControl))}`,
    );
    expect(statusCounts(toControl)).toEqual({ 200: toControl.length });
    expect(toControl.filter((s) => s.start >= goneAt).length).toBeGreaterThanOrEqual(5);
    // In flight at the kill: answered (200) or cut before any header (502). Nothing else, ever.
    expect(Object.keys(statusCounts(toAgent)).filter((s) => s !== '200' && s !== '502')).toEqual([]);
    const agentAfter = toAgent.filter((s) => s.start >= goneAt);
    expect(agentAfter.length).toBeGreaterThanOrEqual(5);
    agentAfter.forEach((s) => expectJsonError(s, 502, 'upstream_unreachable'));
    const text = await scrapeMetrics(gw.gateway.admin.port);
    expect(metricValue(text, 'gateway_requests_total', { status: '502' })).toBeGreaterThanOrEqual(agentAfter.length);

    // Back on the same port: the edge's pool connects again by itself.
    const back = await upstreamProcess('agent-server', agent.port);
    for (let i = 0; i < 20; i++) {
      const res = await request(`${gw.url}/threads?after=${i}`, { headersTimeout: 5000, bodyTimeout: 5000 });
      expect(res.statusCode, `request ${i} after the restart`).toBe(200);
      expect(await res.body.json()).toEqual({ upstream: 'agent-server', pid: back.pid, url: `/threads?after=${i}` });
    }
  });
});

describe('a slow upstream', () => {
  it('answers 504 JSON after UPSTREAM_TIMEOUT=1s (undici times headers at ~1 s resolution: allowed up to 2.5 s), aborts the upstream request, and serves others meanwhile', async () => {
    const upstreamClosed = deferred();
    const up = await inProcessUpstream((req, res) => {
      if (req.url !== '/slow') return echoJson(req, res);
      req.resume();
      const timer = setTimeout(() => res.end('too late'), 10_000);
      res.once('close', () => (clearTimeout(timer), upstreamClosed.resolve()));
    });
    const gw = await gateway({ AGENT_SERVER_URL: up.url, CONTROL_PLANE_URL: up.url, UPSTREAM_TIMEOUT: '1s' });

    const started = performance.now();
    const slow = request(`${gw.url}/slow`, { headersTimeout: 10_000 }).then(async (res) => ({
      status: res.statusCode,
      body: await res.body.text(),
      ms: performance.now() - started,
    }));
    // While the slow request waits, others pass.
    let fastDone = 0;
    for (let i = 0; i < 5; i++) {
      const res = await request(`${gw.url}/fast`, { headersTimeout: 5000 });
      await res.body.dump();
      expect(res.statusCode).toBe(200);
      fastDone++;
    }
    const answer = await within(slow, 5000, '504');
    expect(fastDone).toBe(5);
    expectJsonError({ id: '/slow', ...answer }, 504, 'upstream_timeout');
    expect(answer.ms).toBeGreaterThanOrEqual(900);
    expect(answer.ms).toBeLessThan(2500);
    await within(upstreamClosed.promise, 2000, 'upstream request aborted after the timeout');
  });
});

describe('an upstream that drops an event stream halfway', () => {
  // What broke: undici destroys the writable its stream() factory returned when the upstream fails mid-body; that
  // writable was the client's response, so the client saw "aborted" before forward could end the stream (and forward
  // read the stream's content-type with getHeader(), which is empty after writeHead(status, headers), so it would have
  // cut it anyway).
  it('ends the client stream cleanly: "end" fires, no error, both frames received, no stream left open', async () => {
    const clientHasBoth = deferred();
    const up = await inProcessUpstream((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write('id: 1\ndata: one\n\n');
      res.write('id: 2\ndata: two\n\n');
      // Cut the connection (no terminating chunk) once the client holds both frames.
      void clientHasBoth.promise.then(() => req.socket.destroy());
    });
    const gw = await gateway({ AGENT_SERVER_URL: up.url, CONTROL_PLANE_URL: up.url });

    const outcome = await within(
      new Promise<{ text: string; complete: boolean; error?: string; status: number; type: string | undefined }>(
        (resolve) => {
          const req = get(`${gw.url}/threads/t/runs/stream`, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => {
              text += chunk;
              if (text.includes('data: two\n\n')) clientHasBoth.resolve();
            });
            res.on('end', () =>
              resolve({ text, complete: res.complete, status: res.statusCode ?? 0, type: res.headers['content-type'] }),
            );
            res.on('error', (err) =>
              resolve({
                text,
                complete: false,
                error: err.message,
                status: res.statusCode ?? 0,
                type: res.headers['content-type'],
              }),
            );
          });
          req.on('error', (err) =>
            resolve({ text: '', complete: false, error: err.message, status: 0, type: undefined }),
          );
        },
      ),
      5000,
      'client stream end',
    );
    expect(
      outcome,
      'regression: an upstream failing mid-stream destroyed the client response (undici stream())',
    ).toEqual({
      text: 'id: 1\ndata: one\n\nid: 2\ndata: two\n\n',
      complete: true,
      status: 200,
      type: 'text/event-stream',
    });
    const text = await scrapeMetrics(gw.gateway.admin.port);
    expect(metricValue(text, 'gateway_sse_streams_active')).toBe(0);
  });
});

describe('connections refused: retried only where safe', () => {
  /** Connection attempts the edge's pool made that failed (undici's `connectionError`). */
  function countRefusals(pool: Pool): { readonly count: number } {
    const counter = { count: 0 };
    pool.on('connectionError', () => counter.count++);
    return counter;
  }

  it('through the edge: a refused GET is tried exactly twice, a refused POST with a body once, both answer 502 JSON', async () => {
    const port = await closedPort();
    const gw = await gateway({
      AGENT_SERVER_URL: `http://127.0.0.1:${port}`,
      CONTROL_PLANE_URL: `http://127.0.0.1:${port}`,
    });
    const refusals = countRefusals(gw.gateway.upstreams.agentServer.pool);
    const cases: [method: 'GET' | 'DELETE' | 'POST' | 'PUT', body: string | undefined, attempts: number][] = [
      ['GET', undefined, 2],
      ['DELETE', undefined, 2],
      ['POST', '{}', 1],
      ['PUT', '{}', 1], // idempotent, but its body was already being streamed
    ];
    for (const [method, body, attempts] of cases) {
      const before = refusals.count;
      const res = await request(`${gw.url}/threads`, {
        method,
        body,
        headers: { 'content-type': 'application/json' },
        headersTimeout: 5000,
      });
      expectJsonError({ id: method, status: res.statusCode, body: await res.body.text() }, 502, 'upstream_unreachable');
      expect(refusals.count - before, method).toBe(attempts);
    }
  });

  /**
   * Through the edge, nothing on a port can refuse the first connection and
   * accept the second without a race. So `forward` itself is driven here,
   * with a pool whose connector sends the first connection to a closed port
   * (a real ECONNREFUSED from the kernel) and every later one to a live
   * upstream.
   */
  it('forward(): a GET refused once is retried and answered by the upstream; a refused POST is not retried', async () => {
    const up = await inProcessUpstream(echoJson);
    const refusing = await closedPort();

    async function through(method: 'GET' | 'POST', body?: string) {
      const connect = buildConnector({});
      let attempts = 0;
      const pool = new Pool(up.url, {
        connect: (opts, callback) => {
          attempts++;
          connect(attempts === 1 ? { ...opts, port: String(refusing) } : opts, callback);
        },
      });
      const upstream: Upstream = { name: 'agent-server', basePath: '', pool };
      const edge = createServer((req, res) => {
        const headers: Record<string, string> = { 'x-request-id': method };
        if (req.headers['content-length']) headers['content-length'] = req.headers['content-length'];
        forwardOrAnswer({ upstream, req, res, path: req.url ?? '/', headers });
      });
      await new Promise<void>((resolve) => edge.listen(0, '127.0.0.1', () => resolve()));
      try {
        const res = await request(`http://127.0.0.1:${(edge.address() as AddressInfo).port}/threads`, {
          method,
          body,
          headersTimeout: 5000,
        });
        return { status: res.statusCode, body: await res.body.text(), attempts };
      } finally {
        await pool.close();
        await new Promise<void>((resolve) => edge.close(() => resolve()));
      }
    }

    const getResult = await through('GET');
    expect(getResult.status).toBe(200);
    expect(getResult.attempts).toBe(2);
    expect(up.seen.filter((r) => r.headers['x-request-id'] === 'GET')).toHaveLength(1);

    const post = await through('POST', '{"a":1}');
    expectJsonError({ id: 'POST', ...post }, 502, 'upstream_unreachable');
    expect(post.attempts).toBe(1);
    expect(up.seen.filter((r) => r.headers['x-request-id'] === 'POST')).toHaveLength(0);
  });

  /**
   * A deployment's request can be refused by the revision it was sent to after its route moved on (the old revision
   * stopped listening after a rollover): sent again, it goes where its destination is now, under that upstream's
   * base path, not back to the retired pool.
   */
  it('forward(): a refused GET is sent again where its destination is now; nowhere left is a 502', async () => {
    const now = await inProcessUpstream(echoJson);
    const gone = await closedPort();
    const old: Upstream = { name: 'deployment', basePath: '', pool: new Pool(`http://127.0.0.1:${gone}`) };
    const moved: Upstream = { name: 'deployment', basePath: '/base', pool: new Pool(now.url) };
    let current: Upstream | null = moved;
    const edge = createServer((req, res) => {
      const path = req.url ?? '/';
      forwardOrAnswer({ upstream: old, again: () => current, req, res, path, headers: { 'x-request-id': path } });
    });
    await new Promise<void>((resolve) => edge.listen(0, '127.0.0.1', () => resolve()));
    const url = `http://127.0.0.1:${(edge.address() as AddressInfo).port}`;
    try {
      const res = await request(`${url}/threads?x=1`, { headersTimeout: 5000 });
      expect(res.statusCode).toBe(200);
      await res.body.dump();
      expect(now.seen.filter((r) => r.headers['x-request-id'] === '/threads?x=1').map((r) => r.url)).toEqual([
        '/base/threads?x=1',
      ]);

      current = null; // the deployment has no route any more
      const lost = await request(`${url}/gone`, { headersTimeout: 5000 });
      expectJsonError(
        { id: 'gone', status: lost.statusCode, body: await lost.body.text() },
        502,
        'upstream_unreachable',
      );
      expect(now.seen.filter((r) => r.headers['x-request-id'] === '/gone')).toHaveLength(0);
    } finally {
      await Promise.all([old.pool.close(), moved.pool.close()]);
      await new Promise<void>((resolve) => edge.close(() => resolve()));
    }
  });
});
