import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { request } from 'undici';
import { beforeAll, describe, expect, it } from 'vitest';
import { forwardingSetup, seenById } from '../helpers/forwarding.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { collect, connectRaw, head, rawRequest } from '../helpers/raw-http.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { deferred, within } from '../helpers/async.ts';

/**
 * Bodies through the real edge to real upstreams: body limits (413) and large
 * bodies both ways, streamed rather than buffered.
 */

const setup = forwardingSetup();
const { routes } = setup;
let main: TestGateway, tight: TestGateway, agent: TestUpstream;
beforeAll(() => void ({ main, tight, agent } = setup));

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
    socket.write(
      head('POST /upload HTTP/1.1', [
        ['Host', 'edge.test'],
        ['x-request-id', id],
        ['Content-Length', String(64 * 1024 * 1024)],
      ]),
    );
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
    socket.write(
      head('POST /upload HTTP/1.1', [
        ['Host', 'edge.test'],
        ['x-request-id', id],
        ['Transfer-Encoding', 'chunked'],
      ]),
    );
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
            head('POST /upload HTTP/1.1', [
              ['Host', 'edge.test'],
              ['x-request-id', id],
              ['Transfer-Encoding', 'chunked'],
              ['Connection', 'close'],
            ]),
            `400\r\n`,
            body,
            '\r\n0\r\n\r\n',
          )
        : await rawRequest(
            tight.port,
            head('POST /upload HTTP/1.1', [
              ['Host', 'edge.test'],
              ['x-request-id', id],
              ['Content-Length', '1024'],
              ['Connection', 'close'],
            ]),
            body,
          );
      expect(res.status, chunked ? 'chunked' : 'content-length').toBe(200);
      expect(res.json()).toEqual({ bytes: 1024 });
    }
  });

  it('one byte over MAX_BODY with Content-Length is 413', async () => {
    const res = await rawRequest(
      tight.port,
      head('POST /upload HTTP/1.1', [
        ['Host', 'edge.test'],
        ['Content-Length', '1025'],
        ['Connection', 'close'],
      ]),
      Buffer.alloc(1025, 7),
    );
    expect(res.status).toBe(413);
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
    const responded = request(`${main.url}/mirror`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/octet-stream' },
    });
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
