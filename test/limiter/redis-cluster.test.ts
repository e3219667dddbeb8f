import { randomUUID } from 'node:crypto';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keySlot } from '../../src/limiter/key-slot.ts';
import { RedisLimiter } from '../../src/limiter/redis-limiter.ts';
import { startRedisCluster, type RedisCluster } from '../../support/redis-server.ts';
import { limiterContract } from './contract.ts';

/**
 * A private 3-master cluster on free loopback ports, torn down afterwards.
 * The contract runs twice: with every key of a call in one slot (a hash tag:
 * one script, exact), and with keys spread over slots (one script per slot,
 * denied calls refunded; see redis-cluster-limiter.ts for the guarantee).
 */

let cluster: RedisCluster;
let client: Cluster;

beforeAll(async () => {
  cluster = await startRedisCluster(3);
  client = new Cluster([...cluster.nodes], { enableAutoPipelining: true, redisOptions: { maxRetriesPerRequest: 1 } });
  await client.ping();
}, 30_000);

afterAll(async () => {
  await client?.quit().catch(() => client.disconnect());
  await cluster?.stop();
});

function harness(oneSlot: boolean) {
  return async () => {
    const prefix = oneSlot ? `{${randomUUID()}}` : randomUUID();
    const limiter = new RedisLimiter(client, { ownsClient: false });
    return {
      limiter,
      key: (name: string) => `${prefix}:${name}`,
      pttl: (key: string) => client.pttl(key),
      splitsCalls: !oneSlot,
      peer: (leaseMs: number) => new RedisLimiter(client, { ownsClient: false, leaseMs }),
      close: () => limiter.close(), // the cluster is private and goes away with its keys
    };
  };
}

limiterContract('redis cluster, all keys of a call in one slot', harness(true));
limiterContract('redis cluster, keys spread over slots', harness(false));

describe('RedisLimiter on Redis Cluster', () => {
  it('computes the slot Redis computes', async () => {
    const keys = [
      '',
      'a',
      '123456789',
      'rl:us:runs-query:api-key:AbCdEfGhIjKlMnOpQrStUv',
      '{user1000}.following',
      'foo{}{bar}',
      'foo{{bar}}zap',
      'foo{bar}{zap}',
      'ümlaut:{é}',
      '{}',
      'x}{y',
    ];
    for (const key of keys) expect(keySlot(key), key).toBe(await client.cluster('KEYSLOT', key));
    expect(keySlot('123456789')).toBe(0x31c3 & 16383); // CRC16/XMODEM check value
  });

  it('a call whose buckets live on different nodes is decided together', async () => {
    const [a, b] = keysOnDifferentNodes();
    const limiter = new RedisLimiter(client, { ownsClient: false });
    const small = { key: a, capacity: 1, perSeconds: 3600 };
    const big = { key: b, capacity: 5, perSeconds: 3600 };
    expect((await limiter.consume([small, big])).buckets.map((x) => x.remaining)).toEqual([0, 4]);

    const denied = await limiter.consume([small, big]);
    expect(denied.allowed).toBe(false);
    expect(denied.buckets.map((x) => x.remaining)).toEqual([0, 4]); // the big bucket's token was given back
    expect(denied.retryAfterMs).toBeGreaterThan(3_600_000 - 1000);
    expect((await limiter.consume([big])).buckets[0]!.remaining).toBe(3);
  });

  it('a refund that fills a bucket again removes its key', async () => {
    const [a, b] = keysOnDifferentNodes();
    const limiter = new RedisLimiter(client, { ownsClient: false });
    await limiter.consume([{ key: a, capacity: 1, perSeconds: 3600 }]);
    const out = await limiter.consume([
      { key: a, capacity: 1, perSeconds: 3600 },
      { key: b, capacity: 5, perSeconds: 3600 },
    ]);
    expect(out.buckets[1]).toEqual({ remaining: 5, msToNextToken: 0, msToToken: 0 });
    expect(await client.exists(b)).toBe(0);
  });
});

/** Two fresh keys whose slots are served by different masters. */
function keysOnDifferentNodes(): [string, string] {
  const owner = (key: string) => (client as unknown as { slots: string[][] }).slots[keySlot(key)]!.join();
  const a = `${randomUUID()}:a`;
  for (;;) {
    const b = `${randomUUID()}:b`;
    if (owner(b) !== owner(a)) return [a, b];
  }
}
