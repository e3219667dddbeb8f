import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { OPEN_RULES, rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';

/**
 * Finding "connections to the edge": there was no per-client cap on HTTP connections (only WebSockets had one). One
 * client held every slot of MAX_CONNECTIONS with idle keep-alive sockets (one cheap request each, then 65 s idle) and
 * new clients timed out. Now one address holds at most HTTP_MAX_CONNECTIONS_PER_IP connections (one more is answered
 * 429 `too_many_connections`), and near MAX_CONNECTIONS idle keep-alive sockets are closed, so the slots go to clients
 * with a request. Loopback has many addresses: the attacker is 127.0.0.1, the newcomer 127.0.0.2.
 */
let gw: TestGateway | undefined;
let upstream: TestUpstream | undefined;
let rules: { dir: string; remove(): void } | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await gw?.close();
  await upstream?.close();
  rules?.remove();
});

async function start(env: Record<string, string>): Promise<TestGateway> {
  upstream = await startUpstream();
  rules = rulesDir(OPEN_RULES);
  const url = upstream.url;
  gw = await startTestGateway({ RULES_DIR: rules.dir, AGENT_SERVER_URL: url, CONTROL_PLANE_URL: url, ...env });
  return gw;
}

/**
 * One keep-alive request from `localAddress`: the first line of its answer ('' when the connection closed without
 * one, or nothing came within 10 s). The socket stays open unless the gateway closes it.
 */
function oneRequest(port: number, localAddress: string): Promise<{ status: string; socket: Socket }> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress });
    sockets.push(socket);
    let got = '';
    const done = () => resolve({ status: got.split('\r\n')[0] ?? '', socket });
    const timer = setTimeout(done, 10_000);
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      got += chunk.toString('latin1');
      if (got.includes('\r\n\r\n')) (clearTimeout(timer), done());
    });
    socket.on('close', () => (clearTimeout(timer), done()));
    socket.on('connect', () => socket.write('GET /info HTTP/1.1\r\nHost: edge\r\n\r\n'));
  });
}

describe('one client holds the edge’s connections with idle keep-alives', { timeout: 60_000 }, () => {
  it('at HTTP_MAX_CONNECTIONS_PER_IP one more connection from that address is refused; other addresses are served', async () => {
    const g = await start({ HTTP_MAX_CONNECTIONS_PER_IP: '5' });
    const held: { status: string; socket: Socket }[] = [];
    for (let i = 0; i < 5; i++) held.push(await oneRequest(g.port, '127.0.0.1'));
    expect(held.map((h) => h.status)).toEqual(Array(5).fill('HTTP/1.1 200 OK'));
    const refused = await oneRequest(g.port, '127.0.0.1');
    expect(refused.status).toBe('HTTP/1.1 429 Too Many Requests');
    expect((await oneRequest(g.port, '127.0.0.2')).status).toBe('HTTP/1.1 200 OK');
    // A connection given up frees its place.
    await new Promise<void>((resolve) => (held[0]!.socket.once('close', () => resolve()), held[0]!.socket.destroy()));
    let again = '';
    for (let i = 0; i < 50 && again !== 'HTTP/1.1 200 OK'; i++) {
      again = (await oneRequest(g.port, '127.0.0.1')).status;
      if (again !== 'HTTP/1.1 200 OK') await new Promise((r) => setTimeout(r, 100)); // the close not seen yet
    }
    expect(again).toBe('HTTP/1.1 200 OK');
  });

  it('near MAX_CONNECTIONS idle keep-alive sockets are closed, and a new client is served', async () => {
    const g = await start({ MAX_CONNECTIONS: '20' });
    const held: { status: string; socket: Socket }[] = [];
    for (let i = 0; i < 20; i++) held.push(await oneRequest(g.port, '127.0.0.1'));
    expect(held.every((h) => h.status === 'HTTP/1.1 200 OK')).toBe(true);
    expect((await oneRequest(g.port, '127.0.0.2')).status).toBe('HTTP/1.1 200 OK');
    expect(held.filter((h) => h.socket.destroyed || h.socket.readableEnded).length).toBeGreaterThan(0);
  });
});
