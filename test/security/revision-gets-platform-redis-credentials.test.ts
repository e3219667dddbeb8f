import { Client } from '@langchain/langgraph-sdk';
import { httpUrl } from '../helpers/target-url.ts';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisProcess } from '../../support/redis-server.ts';
import { client } from '../services/control-plane/helpers.ts';
import { answer, hostileApp, hostileNextToVictim, victimServes, type Attack } from './fixtures/two-tenants.ts';
import { FIND_REDIS } from './fixtures/redis-from-app.ts';

/**
 * Finding "other tenants' secrets and the gateway's settings", its Redis half:
 * with REDIS_URL every revision's process got the platform's URL, password
 * and all, in its start message, and read the key registry with it. App code
 * shares that process: it captures the credentials (here: it cuts its own
 * Redis connection and reads the AUTH its client sends again) and, with them,
 * reads every tenant's data, the sealed secrets and the key registry,
 * repoints another deployment's route, or flushes everything. Now a revision
 * gets a Redis user of its deployment's own, limited to its data prefix and
 * the commands of its Agent Server, and checks keys through the host; since
 * issue 34 it does not even hold that user's credentials: it gets a socket
 * the host forwards, authenticating itself (redis-forward.ts), so "what it
 * has" below is that socket. The
 * Redis is a private one with a password, never the shared one.
 */
const PLATFORM_PASSWORD = `platform-${randomBytes(12).toString('hex')}`;
const DATA = 'deployment';

/**
 * At request time: cut the process's own Redis connections and capture what its client writes as it reconnects (an
 * AUTH, if it has credentials), and what it finds of its Redis in its own heap (FIND_REDIS).
 */
const CAPTURE_REDIS_AUTH = (port: number) => `
  const net = await import('node:net');
  const found = await findRedis('${DATA}', ${port});
  const written: string[] = [];
  // Its Redis connection: TCP to the port, or a Unix socket it opened (not its stdio and control channel, fd 0-3, nor
  // a connection its Agent Server accepted on its own socket, this request's among them).
  const ours = (s: any) =>
    s.remotePort === ${port} || (s._handle?.constructor?.name === 'Pipe' && s._handle.fd > 3 && !s.server);
  const write = net.Socket.prototype.write;
  net.Socket.prototype.write = function (this: any, chunk: any, ...rest: any[]) {
    written.push(String(chunk));
    return (write as any).call(this, chunk, ...rest);
  } as any;
  let cut = 0;
  for (const h of (process as any)._getActiveHandles()) if (h instanceof net.Socket && ours(h)) (h.destroy(), cut++);
  await new Promise((r) => setTimeout(r, 1500));
  net.Socket.prototype.write = write;
  // RESP: *<n> $4 AUTH $<len> <user or password> [$<len> <password>]
  const lines = written.join('').split('\\r\\n');
  const at = lines.findIndex((l) => l.toUpperCase() === 'AUTH');
  const n = at < 2 ? 1 : Number(lines[at - 2]!.slice(1));
  const args = at === -1 ? [] : lines.slice(at + 1).filter((l, i) => i % 2 === 1).slice(0, n - 1);
  return JSON.stringify({ env: JSON.stringify(process.env), auth: args, cut, urls: found.urls, socket: found.sockets[0] ?? null });
`;

let redis: RedisProcess;
let admin: Redis;
let a: Attack;
let seen: { env: string; auth: string[]; cut: number; urls: string[]; socket: string | null };

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  await admin.config('SET', 'requirepass', PLATFORM_PASSWORD);
  await admin.auth(PLATFORM_PASSWORD);
  a = await hostileNextToVictim(hostileApp(FIND_REDIS, CAPTURE_REDIS_AUTH(redis.port)), {
    REDIS_URL: `redis://:${PLATFORM_PASSWORD}@127.0.0.1:${redis.port}`,
    DEPLOYMENT_DATA_PREFIX: DATA,
  });
  expect(a.hostile.status, a.hostile.message ?? '').toBe('DEPLOYED');
  seen = JSON.parse(await answer(a, a.hostile)) as typeof seen;
}, 240_000);

afterAll(async () => {
  await a?.close();
  admin?.disconnect();
  await redis?.stop();
});

/** A client with what the hostile app has: the socket its process reaches Redis through (no credentials). */
function withCaptured(): Redis {
  const c = new Redis({
    path: seen.socket!,
    enableReadyCheck: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  c.on('error', () => {});
  return c;
}

/** The error of a command, or `allowed` when it ran. */
async function refusal(p: Promise<unknown>): Promise<string> {
  return p.then(
    () => 'allowed',
    (err: Error) => err.message,
  );
}

describe('a revision gets the platform Redis credentials', { timeout: 60_000 }, () => {
  it('finds no password in its environment, its start message or what its client sends', () => {
    expect(seen.cut, 'the app cut its own Redis connection').toBeGreaterThan(0);
    expect(seen.env).not.toContain(PLATFORM_PASSWORD);
    // Its client reconnects to the host's socket without any AUTH: the forwarder authenticates as its deployment.
    expect(seen.auth).toEqual([]);
    expect(seen.urls).toEqual([]);
    expect(seen.socket).toMatch(/redis\.sock$/);
  });

  it('with what it has, reaches none of the secrets, routes, key registry or other tenants', async () => {
    const theirs = `${DATA}:${a.victim.id}:thread:planted`;
    await admin.set(theirs, 'victim data');
    const platformKeys = (await admin.keys('*')).filter((k) => !k.startsWith(`${DATA}:`));
    // The control plane's store (the sealed secrets), the route table and the key registry are all there.
    expect(platformKeys.some((k) => k.startsWith('cp:'))).toBe(true);
    expect(platformKeys.some((k) => k.startsWith('keys:'))).toBe(true);
    expect(platformKeys.some((k) => k.includes('routes'))).toBe(true);
    const c = withCaptured();
    try {
      expect(await c.set(`${DATA}:${a.hostile.id}:mine`, '1')).toBe('OK'); // the socket works, on its own keys
      for (const key of [theirs, ...platformKeys]) {
        expect(await refusal(c.exists(key)), key).toMatch(/NOPERM/);
        expect(await refusal(c.set(key, 'attacker')), key).toMatch(/NOPERM/);
        expect(await refusal(c.unlink(key)), key).toMatch(/NOPERM/);
      }
      expect(await refusal(c.set(`${DATA}:${a.hostile.id}x:outside`, '1'))).toMatch(/NOPERM/);
      expect(await refusal(c.set('anywhere', '1'))).toMatch(/NOPERM/);
      expect(await refusal(c.eval("return redis.call('GET', KEYS[1])", 1, theirs))).toMatch(/NOPERM/);
      expect(await refusal(c.eval(`return redis.call('GET', '${theirs}')`, 0))).toMatch(/can't access|NOPERM/);
      for (const cmd of [
        ['ACL', 'LIST'],
        ['ACL', 'SETUSER', 'evil', 'on', '>x', '~*', '+@all'],
        ['CONFIG', 'GET', '*'],
        ['FLUSHALL'],
        ['FLUSHDB'],
        ['KEYS', '*'],
        ['SCAN', '0'],
        ['INFO'],
        ['CLIENT', 'LIST'],
        ['PUBLISH', 'anything', 'x'],
        ['SUBSCRIBE', 'anything'],
      ])
        expect(await refusal(c.call(cmd[0]!, ...cmd.slice(1))), cmd.join(' ')).toMatch(/NOPERM/);
    } finally {
      c.disconnect();
    }
    expect(await admin.get(theirs)).toBe('victim data');
    for (const k of platformKeys) expect(await admin.exists(k), k).toBe(1);
    await victimServes(a);
  });

  it("the victim's Agent Server keeps its threads, runs and store in Redis as its own user", async () => {
    const target = await httpUrl(a.t.cp.routes.get(a.victim.id)!.target);
    const sdk = new Client({ apiUrl: target, apiKey: a.victim.tenant.key });
    const thread = await sdk.threads.create();
    await sdk.runs.wait(thread.thread_id, 'echo', { input: { text: 'kept' } });
    const state = await sdk.threads.getState(thread.thread_id);
    expect((state.values as { answer: string }).answer).toBe(`v1 hello ${a.victimSecret}: kept`);
    await sdk.store.putItem(['notes'], 'n1', { text: 'kept' });
    expect((await sdk.store.getItem(['notes'], 'n1'))?.value).toEqual({ text: 'kept' });
    expect((await admin.keys(`${DATA}:${a.victim.id}:*`)).length).toBeGreaterThan(0);
    // A wrong key is still refused: checks go through the host, and an unknown key is not let in.
    const other = new Client({ apiUrl: target, apiKey: a.hostile.tenant.key });
    await expect(other.threads.create()).rejects.toThrow(/401|Invalid API key/);
    const users = (await admin.call('CLIENT', 'LIST')) as string;
    expect(users).toContain(`user=gw-dep-${a.victim.id}`);
  });

  it('deleting the deployment deletes its Redis user and ends its connections', async () => {
    const user = `gw-dep-${a.hostile.id}`;
    expect(await admin.call('ACL', 'GETUSER', user)).not.toBeNull();
    const api = client(a.t.url, a.hostile.tenant);
    expect((await api.delete(`/deployments/${a.hostile.id}`)).status).toBe(204);
    expect(await admin.call('ACL', 'GETUSER', user)).toBeNull();
    expect((await admin.call('ACL', 'USERS')) as string[]).not.toContain(user);
    const c = withCaptured();
    try {
      expect(await refusal(c.ping())).toMatch(/WRONGPASS|closed|Connection|ENOENT/i);
    } finally {
      c.disconnect();
    }
    expect(await admin.call('ACL', 'GETUSER', `gw-dep-${a.victim.id}`)).not.toBeNull();
  });
});
