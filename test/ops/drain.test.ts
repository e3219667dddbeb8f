import { connect } from 'node:net';
import type { ServerResponse } from 'node:http';
import { Client, request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { OPEN_RULES, rulesDir } from '../helpers/gateway.ts';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.ts';
import { echoJson, startUpstream, type TestUpstream } from '../helpers/upstream.ts';

/**
 * Graceful drain of the real process (`gateway start`) on SIGTERM: it stops
 * accepting at once, answers /readyz 503, lets what is in flight finish
 * within DRAIN_SECONDS, cuts what is left, and exits 0.
 */

let upstream: TestUpstream;
let rules: ReturnType<typeof rulesDir>;
let gateway: GatewayProcess | undefined;
const clients: Client[] = [];
/** Upstream responses still open (the never-ending stream), ended in teardown. */
const open = new Set<ServerResponse>();

const SLOW_MS = 1000;
const FRAME_MS = 200;
const STREAM_MS = 1500;

beforeAll(async () => {
  rules = rulesDir(OPEN_RULES);
  upstream = await startUpstream((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path === '/slow') {
      req.resume();
      const timer = setTimeout(() => res.end('slow done'), SLOW_MS);
      res.once('close', () => clearTimeout(timer));
      return;
    }
    if (path === '/stream' || path === '/stream-forever') {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      open.add(res);
      let n = 0;
      const frame = () => res.write(`id: ${n}\ndata: frame ${n++}\n\n`);
      frame();
      const every = setInterval(frame, FRAME_MS);
      const end =
        path === '/stream' ? setTimeout(() => (clearInterval(every), res.end('data: end\n\n')), STREAM_MS) : undefined;
      res.once('close', () => (clearInterval(every), clearTimeout(end), open.delete(res)));
      return;
    }
    return echoJson(req, res);
  });
});

afterEach(async () => {
  await gateway?.kill();
  gateway = undefined;
  await Promise.all(clients.splice(0).map((c) => c.destroy()));
});

afterAll(async () => {
  open.forEach((res) => res.destroy());
  await upstream?.close();
  rules?.remove();
});

async function start(drainSeconds: number): Promise<GatewayProcess> {
  gateway = await startGatewayProcess({
    RULES_DIR: rules.dir,
    AGENT_SERVER_URL: upstream.url,
    CONTROL_PLANE_URL: upstream.url,
    DRAIN_SECONDS: String(drainSeconds),
  });
  return gateway;
}

/** A client of its own (one connection), so each held request has its own socket. */
function client(origin: string): Client {
  const c = new Client(origin);
  clients.push(c);
  return c;
}

/** Resolves `p`, or fails after `ms` with `what`. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>(
      (_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)),
    ),
  ]);
}

/** The error code of a fresh TCP connection to `port` ('connected' if it was accepted). */
function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

/** Polls the admin listener's /readyz until it answers `status`; returns the answer. */
async function readyzUntil(
  adminUrl: string,
  status: number,
  timeoutMs = 3000,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await request(`${adminUrl}/readyz`);
    const body = (await res.body.json()) as Record<string, unknown>;
    if (res.statusCode === status) return { status: res.statusCode, body };
    if (Date.now() > deadline)
      throw new Error(`/readyz still ${res.statusCode} after ${timeoutMs} ms: ${JSON.stringify(body)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Reads an event stream to its end; `first` resolves with the first chunk. */
function readStream(body: AsyncIterable<Buffer>): {
  first: Promise<void>;
  done: Promise<{ text: string; error?: string }>;
} {
  let sawFirst!: () => void;
  const first = new Promise<void>((r) => (sawFirst = r));
  const done = (async () => {
    let text = '';
    try {
      for await (const chunk of body) {
        text += chunk.toString('utf8');
        sawFirst();
      }
      return { text };
    } catch (err) {
      return { text, error: (err as Error).message };
    }
  })();
  return { first, done };
}

describe('SIGTERM drains the gateway process', () => {
  it('a slow request and an open stream finish, /readyz is 503, new connections are refused, exit code 0 (DRAIN_SECONDS=5)', async () => {
    const gw = await start(5);
    expect((await readyzUntil(gw.adminUrl, 200)).body).toMatchObject({ status: 'ready', draining: false });

    let slowDone = false;
    const slow = client(gw.url)
      .request({ method: 'GET', path: '/slow' })
      .finally(() => (slowDone = true));
    const streamRes = await client(gw.url).request({ method: 'GET', path: '/stream' });
    expect(streamRes.statusCode).toBe(200);
    expect(streamRes.headers['content-type']).toBe('text/event-stream');
    const stream = readStream(streamRes.body);
    await within(stream.first, 3000, 'first frame before SIGTERM');
    await within(
      (async () => {
        while (!upstream.seen.some((r) => r.url === '/slow')) await new Promise((r) => setTimeout(r, 10));
      })(),
      3000,
      'slow request at the upstream before SIGTERM',
    );

    // Both are in flight when the signal goes.
    expect(slowDone).toBe(false);
    let streamDone = false;
    void stream.done.finally(() => (streamDone = true));
    await Promise.resolve();
    expect(streamDone).toBe(false);
    gw.signal('SIGTERM');

    // Readiness is answered (503) while the edge drains. Not asked again once the held requests end:
    // the drain then ends too, and the admin listener closes with the process.
    const draining = await readyzUntil(gw.adminUrl, 503);
    expect(draining.body).toMatchObject({ status: 'not ready', draining: true });
    // /readyz turns 503 in the same tick as the edge listener closes: from now on nothing new gets in.
    expect(await tryConnect(gw.port)).toBe('ECONNREFUSED');

    const slowRes = await within(slow, 5000, 'slow response during the drain');
    expect(slowRes.statusCode).toBe(200);
    expect(await slowRes.body.text()).toBe('slow done');

    const streamed = await within(stream.done, 5000, 'stream end during the drain');
    expect(streamed.error).toBeUndefined();
    const frames = streamed.text.match(/data: frame \d+\n\n/g) ?? [];
    expect(frames.length).toBeGreaterThanOrEqual(Math.floor(STREAM_MS / FRAME_MS) - 1); // every frame the upstream sent, not a cut stream
    expect(streamed.text.endsWith('data: end\n\n')).toBe(true);

    const exit = await within(gw.exited, 8000, 'process exit after the drain');
    expect(exit).toEqual({ code: 0, signal: null });
    const drainingAt = (gw.lines().find((l) => l.msg === 'draining' && l.signal === 'SIGTERM')?.time ?? NaN) as number;
    const stoppedAt = (gw.lines().find((l) => l.msg === 'stopped')?.time ?? NaN) as number;
    // The drain ends when the last held request does, not at DRAIN_SECONDS. The held requests' keep-alive connections
    // went idle after their responses and kept server.close() waiting for the 5 s cut (measured on the gateway's own
    // clock, without process start-up and exit).
    expect(
      stoppedAt - drainingAt,
      'regression: idle keep-alive connections held the drain open until the DRAIN_SECONDS cut',
    ).toBeLessThan(4000);
  });

  it('a stream that never ends is cut after DRAIN_SECONDS (1 s) and the process still exits 0', async () => {
    const gw = await start(1);
    const streamRes = await client(gw.url).request({ method: 'GET', path: '/stream-forever' });
    expect(streamRes.statusCode).toBe(200);
    const stream = readStream(streamRes.body);
    await within(stream.first, 3000, 'first frame before SIGTERM');

    const signalled = performance.now();
    gw.signal('SIGTERM');
    await readyzUntil(gw.adminUrl, 503);

    const streamed = await within(stream.done, 4000, 'stream cut by the drain');
    const cutAfter = performance.now() - signalled;
    expect(cutAfter).toBeGreaterThan(1000 - 100);
    expect(cutAfter).toBeLessThan(1000 + 2000);
    expect(streamed.text).toContain('data: frame 1\n\n'); // frames kept flowing during the grace period

    const exit = await within(gw.exited, 5000, 'process exit after the cut');
    expect(exit).toEqual({ code: 0, signal: null });
    // The cut reached the upstream too: its response was closed, not left dangling.
    await within(
      (async () => {
        while (open.size > 0) await new Promise((r) => setTimeout(r, 10));
      })(),
      2000,
      'upstream stream closed',
    );
  });
});
