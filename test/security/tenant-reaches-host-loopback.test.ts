import { lookup } from 'node:dns/promises';
import { connect } from 'node:net';
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisProcess } from '../../support/redis-server.ts';
import { weakHostRedis } from './fixtures/weak-host-redis.ts';
import { targetSocketPath } from '../../src/proxy/socket-target.ts';
import { answer, hostileApp, hostileNextToVictim, type Attack } from './fixtures/two-tenants.ts';

/**
 * Finding "the host's loopback is the tenant's" (issue 34, Why 1 and 2): the sandbox shared the host's network, so
 * graph code reached every listener on 127.0.0.1 (a trust-auth PostgreSQL gave superuser, a password-less Redis
 * answered), a port scan found every other deployment's Agent Server, the bundled services and the admin listener,
 * and other deployments answered straight on their ports, past every limit of the edge. Now each revision has a
 * network namespace of its own: its loopback is its own, the host's addresses, private and link-local ranges are
 * prohibited, and the edge reaches a revision on a Unix socket in a folder of the host's. Egress to the outside world
 * keeps working (checked when this host itself reaches the npm registry).
 *
 * The weak host service is a password-less redis-server of this test (protected mode off), on 127.0.0.1 and on the
 * host's own non-loopback address.
 */
const PROBE = `
const net = await import('node:net');
const dns = await import('node:dns/promises');
const fsp = await import('node:fs/promises');
const probe = (o: object) => new Promise<string>((resolve) => {
  const s = net.connect(o as never);
  const timer = setTimeout(() => (s.destroy(), resolve('timeout')), 2000);
  s.on('connect', () => { clearTimeout(timer); s.write('PING\\r\\n'); s.once('data', (d) => (s.destroy(), resolve('open ' + String(d).trim()))); setTimeout(() => (s.destroy(), resolve('open')), 500); });
  s.on('error', (e: NodeJS.ErrnoException) => (clearTimeout(timer), resolve(e.code ?? 'error')));
});
const ask = JSON.parse(text) as { tcp: { host: string; port: number }[]; socket: string; folder: string; egress: string | null };
const out: Record<string, string> = {};
for (const t of ask.tcp) out[t.host + ':' + t.port] = await probe(t);
out.socket = await probe({ path: ask.socket });
out.folder = await fsp.readdir(ask.folder).then((l) => 'listed ' + l.join(','), (e: NodeJS.ErrnoException) => e.code ?? 'error');
const connects = (port: number) => new Promise<boolean>((resolve) => {
  const s = net.connect({ host: '127.0.0.1', port });
  // Connected to itself (its own port picked as the source) is not a listener.
  s.on('connect', () => (s.destroy(), resolve(s.localPort !== port)));
  s.on('error', () => resolve(false));
});
const maybe: number[] = [];
for (let p = 1; p <= 65535; p += 512) {
  const ports = Array.from({ length: Math.min(512, 65536 - p) }, (_, i) => p + i);
  const r = await Promise.all(ports.map(connects));
  maybe.push(...ports.filter((_, i) => r[i]));
}
// Two probes of a batch can meet each other (one's source port the other's target: a simultaneous open): alone again.
const open: number[] = [];
for (const port of maybe) if (await connects(port)) open.push(port);
out.scan = 'open ports ' + open.join(',');
if (ask.egress) {
  const { address } = await dns.lookup(ask.egress, { family: 4 }).catch(() => ({ address: '' }));
  out.egress = address ? await probe({ host: address, port: 443 }) : 'no address';
}
return JSON.stringify(out);
`;

let a: Attack;
let redis: RedisProcess;
let hostAddress: string | undefined;
beforeAll(async () => {
  ({ redis, hostAddress } = await weakHostRedis());
  a = await hostileNextToVictim(hostileApp('', PROBE));
}, 240_000);
afterAll(async () => {
  await a?.close();
  await redis?.stop();
});

/** Whether this host reaches the npm registry (the only outside address this project's machines reach). */
async function hostHasEgress(): Promise<boolean> {
  try {
    const { address } = await lookup('registry.npmjs.org', { family: 4 });
    return await new Promise((resolve) => {
      const s = connect({ host: address, port: 443 });
      s.setTimeout(3000, () => (s.destroy(), resolve(false)));
      s.on('connect', () => (s.destroy(), resolve(true)));
      s.on('error', () => resolve(false));
    });
  } catch {
    return false;
  }
}

describe('a deployment reaches the host network', { timeout: 120_000 }, () => {
  it("reaches neither the host's services, nor other deployments, nor the private ranges; egress works", async () => {
    expect(a.hostile.status, a.hostile.message ?? '').toBe('DEPLOYED');
    const victimSocket = targetSocketPath(a.t.cp.routes.get(a.victim.id)!.target)!;
    expect(victimSocket).toMatch(/agent\.sock$/);
    const controlPlanePort = Number(new URL(a.t.url).port);
    const tcp = [
      { host: '127.0.0.1', port: redis.port },
      { host: '127.0.0.1', port: controlPlanePort },
      ...(hostAddress ? [{ host: hostAddress, port: redis.port }] : []),
      { host: '10.255.255.53', port: 53 },
      { host: '169.254.169.254', port: 80 },
      { host: '192.168.1.1', port: 80 },
    ];
    const egress = (await hostHasEgress()) ? 'registry.npmjs.org' : null;
    const ask = { tcp, socket: victimSocket, folder: dirname(victimSocket), egress };
    const out = JSON.parse(await answer(a, a.hostile, JSON.stringify(ask))) as Record<string, string>;
    for (const t of tcp) expect(out[`${t.host}:${t.port}`], `${t.host}:${t.port}`).not.toMatch(/^open/);
    // The victim's socket and its folder are not in the hostile sandbox at all.
    expect(out.socket).toBe('ENOENT');
    expect(out.folder).toBe('ENOENT');
    expect(out.scan).toBe('open ports ');
    if (egress) expect(out.egress).toMatch(/^open/);
    // The host's own Redis was there all along (the probe would have found it from the host's network).
    const fromHost = await new Promise<boolean>((resolve) => {
      const s = connect({ host: '127.0.0.1', port: redis.port }, () => (s.destroy(), resolve(true)));
      s.on('error', () => resolve(false));
    });
    expect(fromHost).toBe(true);
  });
});
