import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { request } from 'undici';
import { beforeAll, describe, expect, it } from 'vitest';
import { forwardingSetup, seenById } from '../helpers/forwarding.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { connectRaw, head } from '../helpers/raw-http.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { deferred, within } from '../helpers/async.ts';

/**
 * Streaming through the real edge to real upstreams: server-sent events frame
 * by frame, client aborts, many open streams. (Request and response bodies:
 * bodies.test.ts.)
 */

const setup = forwardingSetup();
const { routes } = setup;
let main: TestGateway, tight: TestGateway, agent: TestUpstream;
beforeAll(() => void ({ main, tight, agent } = setup));

/** Reads `body` until the text received so far satisfies `done`. */
async function readUntil(
  body: AsyncIterator<Buffer>,
  received: { text: string },
  done: (text: string) => boolean,
): Promise<void> {
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
    await within(
      readUntil(body, received, (t) => t.includes('data: one\n\n')),
      3000,
      'first SSE frame',
    );
    order.push('client got 1');
    expect(received.text).not.toContain('two');
    clientSawFirst.resolve();
    await within(
      readUntil(body, received, (t) => t.includes('data: two\n\n')),
      3000,
      'second SSE frame',
    );
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
    socket.write(
      head('GET /sse/abandoned HTTP/1.1', [
        ['Host', 'edge.test'],
        ['x-request-id', id],
      ]),
    );
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

describe('many open streams', () => {
  it('300 open streams to one upstream do not hold back the next request to it', async () => {
    const open = new Set<ServerResponse>();
    routes.set('/held-open', (_req, res) => {
      sse(res);
      res.write('data: open\n\n');
      open.add(res);
      res.on('close', () => open.delete(res));
    });
    const streams = await Promise.all(
      Array.from({ length: 300 }, async () => {
        const res = await request(`${main.url}/held-open`);
        await res.body[Symbol.asyncIterator]().next(); // the first frame is through: the stream is open end to end
        return res;
      }),
    );
    expect(streams.every((r) => r.statusCode === 200)).toBe(true);
    expect(open.size).toBe(300);
    try {
      const quick = await within(
        request(`${main.url}/quick/after/streams`),
        3000,
        'a request while 300 streams are open',
      );
      expect(quick.statusCode).toBe(200);
      await quick.body.dump();
    } finally {
      for (const r of streams) r.body.destroy();
    }
    await within(
      (async () => {
        while (open.size > 0) await new Promise((r) => setTimeout(r, 20));
      })(),
      3000,
      'the upstream streams closed after their clients left',
    );
  });
});
