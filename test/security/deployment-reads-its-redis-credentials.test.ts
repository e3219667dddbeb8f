import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answer, hostileApp, hostileNextToVictim, victimServes, type Attack } from './fixtures/two-tenants.ts';
import { FIND_REDIS, privateRedis } from './fixtures/redis-from-app.ts';

/**
 * Issue 34, "One EVAL stops the platform's Redis": the attack began with app
 * code reading its deployment's Redis credentials from its own process (the
 * start message, its Agent Server's client), since both share it. Now the
 * process gets only the path of a socket the gateway forwards, authenticating
 * itself: app code searching everything its process holds (environment, a
 * heap snapshot) finds no URL with credentials and no password that Redis
 * accepts, and what it reaches through the socket is its deployment's user,
 * with no AUTH of its own.
 */
const DATA = 'credsdata';
let r: Awaited<ReturnType<typeof privateRedis>>;
let a: Attack;
let seen: { urls: string[]; sockets: string[]; prefixes: string[]; hex: string[]; env: string; through: string[] };

beforeAll(async () => {
  r = await privateRedis();
  const node = `
    const f = await findRedis('${DATA}', ${r.server.port});
    const through: string[] = [];
    {
      const c = await openRedis(f);
      through.push(await c.cmd(['AUTH', 'default', '${'${PLATFORM_PASSWORD}'}']));
      through.push(await c.cmd(['ACL', 'WHOAMI']));
      through.push(await c.cmd(['SET', (f.prefixes[0] ?? '${DATA}:x') + ':mine', '1']));
      c.close();
    }
    return JSON.stringify({ ...f, through });
  `;
  a = await hostileNextToVictim(hostileApp(FIND_REDIS, node.replace('${PLATFORM_PASSWORD}', r.password)), {
    REDIS_URL: r.url,
    DEPLOYMENT_DATA_PREFIX: DATA,
  });
  expect(a.hostile.status, a.hostile.message ?? '').toBe('DEPLOYED');
  seen = JSON.parse(await answer(a, a.hostile)) as typeof seen;
}, 240_000);

afterAll(async () => {
  await a?.close();
  r?.admin.disconnect();
  await r?.server.stop();
});

describe('a deployment reads its Redis credentials', { timeout: 60_000 }, () => {
  it('finds no Redis URL with credentials and no platform password in its process', () => {
    expect(seen.prefixes, 'the search reads the process (its data prefix is there)').toContain(
      `${DATA}:${a.hostile.id}`,
    );
    expect(seen.urls).toEqual([]);
    expect(seen.env).not.toContain(r.password);
    expect(seen.env).not.toMatch(/redis:\/\//);
    expect(seen.sockets.length, 'its Redis is a socket').toBeGreaterThan(0);
  });

  it('no 64-hex-digit string in its process is its Redis user\u2019s password', async () => {
    const user = `gw-dep-${a.hostile.id}`;
    expect(await r.admin.call('ACL', 'GETUSER', user)).not.toBeNull();
    // One connection, one AUTH per candidate (a wrong one answers WRONGPASS and keeps the connection).
    const c = new Redis({ port: r.server.port, host: '127.0.0.1', enableReadyCheck: false, maxRetriesPerRequest: 0 });
    c.on('error', () => {});
    const tries: (string | null)[] = [];
    try {
      for (const candidate of seen.hex)
        tries.push(
          await c.call('AUTH', user, candidate).then(
            () => candidate,
            () => null,
          ),
        );
    } finally {
      c.disconnect();
    }
    expect(seen.hex.length, 'the search sees hex strings (hashes of the runtime)').toBeGreaterThan(0);
    expect(tries.filter((t) => t !== null)).toEqual([]);
  });

  it('through the socket: no AUTH of its own, its deployment\u2019s user, its own keys', async () => {
    const [auth, whoami, set] = seen.through;
    expect(auth).toMatch(/^-ERR AUTH is the gateway's/);
    expect(whoami).toMatch(/NOPERM/);
    expect(set).toBe('+OK');
    expect(await r.admin.get(`${DATA}:${a.hostile.id}:mine`)).toBe('1');
    await victimServes(a);
  });
});
