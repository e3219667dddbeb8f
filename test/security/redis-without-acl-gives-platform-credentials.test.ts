import { Redis } from 'ioredis';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_ORG } from '../../src/keys/bootstrap.ts';
import { DeploymentRedisUsers } from '../../src/services/control-plane/serving/deployment-redis-users.ts';
import { startRedis, startRedisOnPort, type RedisProcess } from '../../support/redis-server.ts';
import { eventually } from '../services/control-plane/helpers.ts';
import { LogCapture } from '../helpers/gateway.ts';

/**
 * Where Redis cannot give a deployment a user of its own (REDIS_URL's user may
 * not run ACL, a Redis older than 6, or a default user without a password
 * that anyone on the host can use), handing out REDIS_URL would give every
 * tenant the platform's data: the control plane fails closed, as without a
 * sandbox, and says so once. With ACLs, each start rotates the password and a
 * Redis restarted without its users gets them back. Private servers only.
 */
const servers: RedisProcess[] = [];
const clients: Redis[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.disconnect();
  for (const s of servers.splice(0)) await s.stop();
});

async function server(): Promise<RedisProcess> {
  const s = await startRedis();
  servers.push(s);
  return s;
}

function connect(url: string): Redis {
  const c = new Redis(url, { maxRetriesPerRequest: 1, enableReadyCheck: false });
  c.on('error', () => {});
  clients.push(c);
  return c;
}

async function users(url: string, trustAllTenants = false) {
  const logs = new LogCapture();
  const u = await DeploymentRedisUsers.open({
    redis: connect(url),
    platformUrl: url,
    trustAllTenants,
    log: pino(logs.stream),
  });
  return { u, logs };
}

/** Whether `url`'s credentials are accepted now (one try, nothing left open). */
async function accepted(url: string): Promise<boolean> {
  const c = new Redis(url, {
    lazyConnect: true,
    enableReadyCheck: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  c.on('error', () => {});
  try {
    await c.connect();
    return (await c.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    c.disconnect();
  }
}

const revision = (org: string | null) => ({ deploymentId: 'd1', dataPrefix: 'deployment:d1', org });

describe('Redis without ACLs for deployments', { timeout: 30_000 }, () => {
  it("refuses another organisation's revision when REDIS_URL's user may not run ACL", async () => {
    const s = await server();
    const admin = connect(s.url);
    await admin.call('ACL', 'SETUSER', 'platform', 'on', '>platform-pw', '~*', '&*', '+@all', '-acl');
    await admin.config('SET', 'requirepass', 'admin-pw');
    const platformUrl = `redis://platform:platform-pw@127.0.0.1:${s.port}`;
    const { u, logs } = await users(platformUrl);
    await expect(u.urlFor(revision('org-other'))).rejects.toThrow(/refuses ACL.*TRUST_ALL_TENANTS=1/);
    await expect(u.urlFor(revision(null))).rejects.toThrow(/TRUST_ALL_TENANTS/);
    expect(await u.urlFor(revision(DEFAULT_ORG))).toBe(platformUrl);
    expect(logs.lines().filter((l) => l.redis === 'shared')).toHaveLength(1);
    const trusting = await users(platformUrl, true);
    expect(await trusting.u.urlFor(revision('org-other'))).toBe(platformUrl);
  });

  it('refuses them on a Redis whose default user needs no password, making no user there', async () => {
    const s = await server();
    const { u } = await users(s.url);
    await expect(u.urlFor(revision('org-other'))).rejects.toThrow(/needs no password/);
    expect(await connect(s.url).call('ACL', 'USERS')).toEqual(['default']);
  });
});

describe('Redis with ACLs for deployments', { timeout: 30_000 }, () => {
  it('rotates the password at each start and makes the users again after a Redis restart', async () => {
    const s = await server();
    await connect(s.url).config('SET', 'requirepass', 'admin-pw');
    const platformUrl = `redis://:admin-pw@127.0.0.1:${s.port}`;
    const { u } = await users(platformUrl);
    const first = new URL(await u.urlFor(revision('org-other')));
    expect(first.username).toBe('gw-dep-d1');
    expect(first.password).not.toContain('admin-pw');
    const second = await u.urlFor(revision('org-other'));
    expect(await accepted(first.href)).toBe(false);
    expect(await accepted(second)).toBe(true);

    await s.stop();
    const again = await startRedisOnPort(s.port);
    servers.push(again);
    await connect(again.url).config('SET', 'requirepass', 'admin-pw');
    await eventually(() => accepted(second), 10_000, 'the user made again');
    u.close();
  });
});
