import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/settings/settings.ts';
import { SettingsError } from '../../src/settings/env.ts';
import { OPEN_RULES, rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';

/**
 * Finding "admin listener on every interface": the admin listener (/metrics, /readyz) bound 0.0.0.0 and the public
 * listener no IPv6. Now ADMIN_HOST (default 127.0.0.1) and HOST (default: dual-stack `::`, 0.0.0.0 without IPv6).
 */
let upstream: TestUpstream;
let gw: TestGateway;
let rules: ReturnType<typeof rulesDir>;

beforeAll(async () => {
  rules = rulesDir(OPEN_RULES);
  upstream = await startUpstream();
  gw = await startTestGateway({
    RULES_DIR: rules.dir,
    AGENT_SERVER_URL: upstream.url,
    CONTROL_PLANE_URL: upstream.url,
  });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
  rules?.remove();
});

/** This machine's own first non-loopback, non-link-local address, if it has one (traffic to it stays on the host). */
function ownExternalAddress(): string | undefined {
  const all = Object.values(networkInterfaces()).flatMap((list) => list ?? []);
  return all.find((a) => !a.internal && a.family === 'IPv4')?.address;
}

/** Resolves with 'connected' or the connection error's code. */
function tryConnect(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 2000 });
    socket.once('connect', () => (socket.destroy(), resolve('connected')));
    socket.once('timeout', () => (socket.destroy(), resolve('timeout')));
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
  });
}

const hasIPv6Loopback = Object.values(networkInterfaces())
  .flatMap((list) => list ?? [])
  .some((a) => a.address === '::1');

describe('listen addresses', () => {
  it('the admin listener binds 127.0.0.1 by default', async () => {
    expect((gw.gateway.admin.server.address() as { address: string }).address).toBe('127.0.0.1');
    expect(await tryConnect('127.0.0.1', gw.gateway.admin.port)).toBe('connected');
  });

  it.skipIf(ownExternalAddress() === undefined)(
    "the admin listener is not reachable on this machine's non-loopback address",
    async () => {
      expect(await tryConnect(ownExternalAddress()!, gw.gateway.admin.port)).toBe('ECONNREFUSED');
    },
  );

  it.skipIf(!hasIPv6Loopback)('the public listener answers on ::1 as well as 127.0.0.1 (dual-stack)', async () => {
    for (const host of ['[::1]', '127.0.0.1']) {
      const res = await request(`http://${host}:${gw.port}/v6`);
      await res.body.dump();
      expect(res.statusCode).toBe(200);
    }
    const seen = upstream.seen.filter((r) => r.url === '/v6');
    expect(seen[0]?.headers['x-real-ip']).toBe('::1');
    expect(seen[1]?.headers['x-real-ip']).toBe('127.0.0.1');
  });

  it('HOST and ADMIN_HOST are read, brackets allowed; an invalid value fails naming the variable', () => {
    const base = { PORT: '0', ADMIN_PORT: '0' };
    expect(loadSettings(base)).toMatchObject({ host: null, adminHost: '127.0.0.1' });
    expect(loadSettings({ ...base, HOST: '127.0.0.1', ADMIN_HOST: '[::1]' })).toMatchObject({
      host: '127.0.0.1',
      adminHost: '::1',
    });
    for (const name of ['HOST', 'ADMIN_HOST']) {
      for (const bad of ['my-laptop', '0.0.0.0:80', '1.2.3']) {
        expect(() => loadSettings({ ...base, [name]: bad })).toThrow(SettingsError);
        expect(() => loadSettings({ ...base, [name]: bad })).toThrow(new RegExp(`^${name}: `));
      }
    }
  });

  it('HOST=127.0.0.1 binds the public listener to it only', async () => {
    const local = await startTestGateway({ RULES_DIR: rules.dir, AGENT_SERVER_URL: upstream.url, HOST: '127.0.0.1' });
    try {
      expect((local.gateway.edge.server.address() as { address: string }).address).toBe('127.0.0.1');
      if (hasIPv6Loopback) expect(await tryConnect('::1', local.port)).toBe('ECONNREFUSED');
    } finally {
      await local.close();
    }
  });
});
