import { randomUUID } from 'node:crypto';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { within } from '../helpers/async.ts';
import { rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { connectRaw, rawRequest } from '../helpers/raw-http.ts';
import { closeCodeOf, ended, frame, handshake } from '../helpers/raw-websocket.ts';
import { closed, nextMessage, openClient, startWsUpstream, type WsUpstream } from '../helpers/ws-upstream.ts';

/**
 * Hostile WebSocket clients at the edge: nothing rides behind a refused upgrade, frames the edge will not pass close
 * the socket (1002, 1009) without bloating or crashing it, one address holds at most WEBSOCKET_MAX_PER_IP sockets, a
 * drain closes every socket with 1001, and an upgrade to anything but WebSocket is served as the plain request it is.
 */

const rules = rulesDir(`
- id: sockets
  match: { method: GET, template: "/threads/{id}/stream/events" }
  limits:
    - { by: api-key, count: 1, per: 3600s, category: WebSocket open }
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
    WEBSOCKET_MAX_PER_IP: '3',
    MAX_BODY: '1mb',
  });
});
afterAll(async () => {
  await gw?.close();
  await up?.close();
  rules.remove();
});

const upgradeRequest = (path: string, key: string) =>
  `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n` +
  `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nx-api-key: ${key}\r\n\r\n`;

describe('behind a refused upgrade', () => {
  it('a second request or upgrade sent after a denied upgrade is never read: one 429, the connection closes', async () => {
    const key = `k-${randomUUID()}`;
    const first = await openClient(`${gw.url}/threads/${randomUUID()}/stream/events`, { 'x-api-key': key });
    const smuggled = `smuggled-${randomUUID()}`;
    const res = await rawRequest(
      gw.port,
      upgradeRequest(`/threads/${randomUUID()}/stream/events`, key) +
        `GET /${smuggled} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n` +
        upgradeRequest(`/threads/${smuggled}/stream/events`, `other-${key}`),
    );
    expect(res.status).toBe(429);
    expect(res.headers.ratelimit?.[0]).toMatch(/^"sockets.api-key";r=0/);
    // Exactly one response: nothing after the 429's body.
    expect(res.body.toString()).toMatch(/^\{"detail":"Rate limit exceeded"[^]*\}$/);
    expect(up.requests.some((r) => r.path.includes(smuggled))).toBe(false);
    expect(up.upgrades.some((u) => u.path.includes(smuggled))).toBe(false);
    first.close();
  });

  it('nor after an upgrade the upstream refused', async () => {
    up.refuse.set('/refused', 404);
    const smuggled = `smuggled-${randomUUID()}`;
    const res = await rawRequest(
      gw.port,
      upgradeRequest('/refused/socket', `k-${randomUUID()}`) + `GET /${smuggled} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`,
    );
    expect(res.status).toBe(404);
    expect(res.body.toString()).toBe('refused');
    expect(up.requests.some((r) => r.path.includes(smuggled))).toBe(false);
  });

  it('an upgrade pipelined behind a slow response waits for it: the 101 follows the whole response', async () => {
    const socket = await connectRaw(gw.port);
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.write(
      `GET /slow-first HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n${upgradeRequest('/other/socket', `k-${randomUUID()}`)}`,
    );
    await within(
      (async () => {
        while (!text.includes('HTTP/1.1 101')) await new Promise((r) => setTimeout(r, 20));
      })(),
      5000,
      '101',
    );
    const first = text.slice(0, text.indexOf('HTTP/1.1 101'));
    expect(first).toMatch(/^HTTP\/1.1 200 OK\r\n/);
    expect(first.endsWith('0\r\n\r\n')).toBe(true);
    expect(first).toContain('ain');
    socket.destroy();
  });

  it('an upgrade that is not a GET is refused 400 and reaches nothing', async () => {
    const before = up.upgrades.length;
    const res = await rawRequest(gw.port, upgradeRequest('/x', 'k').replace(/^GET/, 'POST'));
    expect(res.status).toBe(400);
    expect(up.upgrades.length).toBe(before);
  });
});

describe('frames the edge will not pass', () => {
  const cases: [string, Buffer, number][] = [
    ['a frame stating 2^40 bytes (more than MAX_BODY)', frame(0x2, '', { length: 2 ** 40 }), 1009],
    ['a frame stating 2^62 bytes', frame(0x2, '', { length: 2 ** 62 }), 1009],
    ['an unmasked client frame', frame(0x1, 'hi', { mask: false }), 1002],
    ['a reserved opcode', frame(0x3, 'hi'), 1002],
    ['an RSV bit (no extension was negotiated)', frame(0x1, 'hi', { rsv: 4 }), 1002],
    ['a continuation without a message', frame(0x0, 'hi'), 1002],
    ['a fragmented ping', frame(0x9, 'hi', { fin: false }), 1002],
  ];
  for (const [what, bytes, code] of cases)
    it(`${what}: the client gets a close frame ${code} and the edge goes on serving`, async () => {
      const { socket, head, received } = await handshake(gw.port, '/other/socket');
      expect(head).toMatch(/^HTTP\/1.1 101/);
      socket.write(bytes);
      await within(ended(socket), 5000, 'socket closed');
      expect(closeCodeOf(received)).toBe(code);
      const ws = await openClient(`${gw.url}/other/socket`);
      ws.send('still here');
      expect(await nextMessage(ws)).toBe('still here');
      ws.close();
    });

  it('a message split into endless empty fragments is bounded (counted as a command), never held whole', async () => {
    const { socket, received } = await handshake(gw.port, `/threads/${randomUUID()}/stream/events`, {
      'x-api-key': `k-${randomUUID()}`,
    });
    const empties = Buffer.concat(Array.from({ length: 40_000 }, () => frame(0x0, '', { fin: false })));
    socket.write(Buffer.concat([frame(0x1, '{', { fin: false }), empties, frame(0x0, '}')]));
    // The commands of this socket are counted by `open` (no rule for /threads/{id}/commands here): allowed, passed on.
    await new Promise((r) => setTimeout(r, 300));
    socket.end(frame(0x8, Buffer.from([0x03, 0xe8])));
    await within(ended(socket), 5000, 'socket closed');
    expect(received.length).toBeGreaterThan(0);
  });
});

describe('bounds', () => {
  it('one address holds at most WEBSOCKET_MAX_PER_IP sockets; a closed one frees its place', async () => {
    const open = await Promise.all([1, 2, 3].map(() => openClient(`${gw.url}/other/socket`)));
    const refused = await openClient(`${gw.url}/other/socket`).then(
      () => null,
      (e: { status: number; body: string }) => e,
    );
    expect(refused?.status).toBe(429);
    expect(JSON.parse(refused!.body)).toMatchObject({ code: 'too_many_websockets' });
    open[0]!.close();
    await closed(open[0]!);
    const again = await within(
      (async () => {
        for (;;) {
          const ws = await openClient(`${gw.url}/other/socket`).catch(() => null);
          if (ws) return ws;
          await new Promise((r) => setTimeout(r, 50));
        }
      })(),
      5000,
      'a place freed',
    );
    for (const ws of [...open.slice(1), again]) ws.close();
  });

  it('an upstream that never answers the upgrade: 504 after UPSTREAM_TIMEOUT, and its place is freed', async () => {
    const held: Socket[] = [];
    const silent = createNetServer((s) => held.push(s.on('error', () => {})));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const own = await startTestGateway({
      AGENT_SERVER_URL: url,
      CONTROL_PLANE_URL: url,
      RULES_DIR: rules.dir,
      UPSTREAM_TIMEOUT: '500ms',
      WEBSOCKET_MAX_PER_IP: '1',
    });
    try {
      for (let i = 0; i < 2; i++) {
        const err = await openClient(`${own.url}/other/socket`).then(
          () => null,
          (e: { status: number; body: string }) => e,
        );
        expect(err?.status).toBe(504);
        expect(JSON.parse(err!.body)).toMatchObject({ code: 'upstream_timeout' });
      }
    } finally {
      for (const s of held) s.destroy();
      silent.close();
      await own.close();
    }
  });

  it('an upgrade to anything but WebSocket (h2c) is served as the ordinary request it also is', async () => {
    const res = await rawRequest(
      gw.port,
      'GET /plain-h2c HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n' +
        'HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\nConnection: close\r\n\r\n',
    );
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('plain');
    expect(up.requests.some((r) => r.path === '/plain-h2c')).toBe(true);
  });
});

describe('drain', () => {
  it('closes every open socket with 1001, then the gateway stops', async () => {
    const own = await startTestGateway({ AGENT_SERVER_URL: up.url, CONTROL_PLANE_URL: up.url, RULES_DIR: rules.dir });
    const sockets = await Promise.all([1, 2].map(() => openClient(`${own.url}/other/socket`)));
    const closes = sockets.map((ws) => closed(ws));
    await within(own.gateway.close(), 10_000, 'gateway closed');
    for (const c of await Promise.all(closes)) expect(c).toEqual({ code: 1001, reason: 'gateway draining' });
  });
});
