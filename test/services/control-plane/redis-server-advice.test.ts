import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import {
  adviseOnRedisServer,
  redisServerAdvice,
} from '../../../src/services/control-plane/serving/redis-server-advice.ts';
import { startRedis } from '../../../support/redis-server.ts';
import { LogCapture } from '../../helpers/gateway.ts';

/** Start-time advice on the operator's Redis (issue 34): read with CONFIG GET, said once, never CONFIG SET. */
const server = await startRedis();
const admin = new Redis(server.url, { maxRetriesPerRequest: 1 });
afterAll(async () => {
  admin.disconnect();
  await server.stop();
});

describe('advice on the operator\u2019s Redis', () => {
  it('a Redis as it comes (no maxmemory, 10000 clients, no idle timeout): one line each, naming what to set', async () => {
    const logs = new LogCapture();
    const before = (await admin.call('CONFIG', 'GET', '*')) as string[];
    await adviseOnRedisServer(admin, 16, pino(logs.stream));
    const lines = logs.lines().map((l) => [l.redis, l.msg]);
    expect(lines.map(([setting]) => setting)).toEqual(['maxmemory', 'maxclients', 'timeout']);
    expect(String(lines[0]![1])).toMatch(/set maxmemory .*noeviction/);
    expect(String(lines[1]![1])).toMatch(/16 \(DEPLOYMENT_REDIS_CONNECTIONS\) per running revision/);
    expect((await admin.call('CONFIG', 'GET', '*')) as string[]).toEqual(before); // nothing changed
  });

  it('a configured Redis: no advice; an evicting policy: advice', () => {
    const set = (o: Record<string, string>) => new Map(Object.entries(o));
    const good = { maxmemory: '1073741824', 'maxmemory-policy': 'noeviction', maxclients: '2000', timeout: '300' };
    expect(redisServerAdvice(set(good), 16)).toEqual([]);
    expect(redisServerAdvice(set({ ...good, 'maxmemory-policy': 'allkeys-lru' }), 16)[0]?.setting).toBe(
      'maxmemory-policy',
    );
  });

  it('a user without CONFIG: one line saying what to check, no failure', async () => {
    await admin.call('ACL', 'SETUSER', 'noconfig', 'reset', 'on', '>pw', '~*', '+@all', '-config');
    const limited = new Redis({ port: server.port, username: 'noconfig', password: 'pw', maxRetriesPerRequest: 1 });
    const logs = new LogCapture();
    await adviseOnRedisServer(limited, 16, pino(logs.stream));
    expect(logs.lines().map((l) => l.msg)).toEqual([
      'cannot read Redis\u2019s configuration: check maxmemory, maxmemory-policy noeviction, maxclients and timeout yourself',
    ]);
    limited.disconnect();
  });
});
