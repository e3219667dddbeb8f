import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answer, hostileApp, hostileNextToVictim, victimServes, type Attack } from './fixtures/two-tenants.ts';
import { FIND_REDIS, privateRedis } from './fixtures/redis-from-app.ts';

/**
 * Issue 34, "Redis connections exhausted": 150 sockets from one sandbox
 * reached Redis's `maxclients` and locked the operator out (`max number of
 * clients reached`): key creation failed, another tenant's redeploy failed.
 * Here with what app code finds of its Redis (its socket now) and a Redis
 * scaled down to 40 clients: the forwarder lets a revision hold at most
 * DEPLOYMENT_REDIS_CONNECTIONS (8 here) and closes the rest, so the
 * platform's own client still connects and the other tenant still serves.
 */
const DATA = 'connsdata';
const HELD = 60;
let r: Awaited<ReturnType<typeof privateRedis>>;
let a: Attack;

beforeAll(async () => {
  r = await privateRedis(['--maxclients', '40']);
  const node = `
    if (text.startsWith('raw:')) {
      const net = await import('node:net');
      const port = Number(text.slice(4));
      const tried = await Promise.all(Array.from({ length: 10 }, () => new Promise<string>((resolve) => {
        const s = net.connect({ host: '127.0.0.1', port });
        s.on('connect', () => resolve('connected'));
        s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
      })));
      return JSON.stringify(tried);
    }
    const f = await findRedis('${DATA}', ${r.server.port});
    const held: any[] = ((globalThis as any).held ??= []);
    const replies: string[] = [];
    for (let i = 0; i < ${HELD}; i++) {
      try {
        const c = await openRedis(f);
        held.push(c);
        replies.push(await c.cmd(['PING'], 2000));
      } catch (err) {
        replies.push(String(err).slice(0, 200)); // Redis full: the attack worked
      }
    }
    return JSON.stringify(replies);
  `;
  a = await hostileNextToVictim(hostileApp(FIND_REDIS, node), {
    REDIS_URL: r.url,
    DEPLOYMENT_DATA_PREFIX: DATA,
    DEPLOYMENT_REDIS_CONNECTIONS: '8',
  });
  expect(a.hostile.status, a.hostile.message ?? '').toBe('DEPLOYED');
}, 240_000);

afterAll(async () => {
  await a?.close();
  r?.admin.disconnect();
  await r?.server.stop();
});

describe('a deployment exhausts the platform Redis connections', { timeout: 60_000 }, () => {
  it('holds at most its cap; the platform still connects and the other tenant serves', async () => {
    const replies = JSON.parse(await answer(a, a.hostile)) as string[];
    const answered = replies.filter((x) => x === '+PONG').length;
    expect(answered).toBeGreaterThan(0);
    // The Agent Server's own client holds some of the 8.
    expect(answered).toBeLessThanOrEqual(8);
    const fresh = new Redis(r.url, { maxRetriesPerRequest: 0, retryStrategy: () => null });
    fresh.on('error', () => {});
    try {
      expect(await fresh.ping().catch((e: Error) => e.message)).toBe('PONG');
    } finally {
      fresh.disconnect();
    }
    expect((await a.t.cp.keys.createKey(a.victim.tenant.org)).key).toBeTruthy();
    await victimServes(a);
  });

  // Sockets straight to Redis's port, without credentials (they count towards maxclients all the same), end with
  // the revision's own network namespace (issue 34, What to do 1), where the host's loopback is not the sandbox's.
  it('unauthenticated sockets straight to the Redis port: unreachable from the sandbox', async () => {
    const tried = JSON.parse(await answer(a, a.hostile, `raw:${r.server.port}`)) as string[];
    expect(tried).toHaveLength(10);
    expect(tried.filter((x) => x === 'connected')).toEqual([]);
  });
});
