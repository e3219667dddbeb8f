import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisLimiter } from '../../src/limiter/redis-limiter.ts';
import { StoreError, type Bucket } from '../../src/limiter/types.ts';
import { startRedis, type RedisProcess } from '../../support/redis-server.ts';
import { sharedRedis, uniquePrefix } from '../helpers/shared-redis.ts';
import { limiterContract } from './contract.ts';

/**
 * The shared Redis is used only under a unique prefix, and every key
 * under it is removed afterwards. Anything that needs to own a server
 * (SCRIPT FLUSH, stopping, pausing) runs against a private redis-server.
 */

const RUN = uniquePrefix('test');
const SCRIPT_SHA = createHash('sha1')
  .update(readFileSync(new URL('../../src/limiter/token-bucket.lua', import.meta.url)))
  .digest('hex');
const shared = sharedRedis({ enableAutoPipelining: true, lazyConnect: true });

async function deleteByPrefix(client: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    if (keys.length) await client.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
}

afterAll(async () => {
  await deleteByPrefix(shared, RUN);
  await shared.quit();
});

limiterContract('redis', async () => {
  const prefix = `${RUN}:${randomUUID()}`;
  const limiter = new RedisLimiter(shared, { ownsClient: false });
  return {
    limiter,
    key: (name) => `${prefix}:${name}`,
    pttl: (key) => shared.pttl(key),
    peer: (leaseMs) => new RedisLimiter(shared, { ownsClient: false, leaseMs }),
    close: async () => {
      await limiter.close();
      await deleteByPrefix(shared, prefix);
    },
  };
});

describe('RedisLimiter', () => {
  it('works on a client without auto-pipelining (it batches by itself)', async () => {
    const plain = sharedRedis();
    const limiter = new RedisLimiter(plain);
    const key = `${RUN}:plain`;
    const outcomes = await Promise.all([1, 2, 3].map(() => limiter.consume([{ key, capacity: 2, perSeconds: 60 }])));
    expect(outcomes.map((o) => o.allowed)).toEqual([true, true, false]);
    await limiter.close();
  });

  it("honours the client's keyPrefix", async () => {
    const prefixed = sharedRedis({ keyPrefix: `${RUN}:prefixed:` });
    const limiter = new RedisLimiter(prefixed);
    const key = `bucket-${randomUUID()}`;
    const outcomes = await Promise.all([1, 2].map(() => limiter.consume([{ key, capacity: 5, perSeconds: 60 }])));
    expect(outcomes.map((o) => o.buckets[0]!.remaining)).toEqual([4, 3]);
    expect(await shared.pttl(`${RUN}:prefixed:${key}`)).toBeGreaterThan(0);
    expect(await shared.exists(key)).toBe(0);
    await limiter.close();
  });

  it('maps a Redis error to StoreError', async () => {
    const key = `${RUN}:wrongtype`;
    await shared.hset(key, 'x', '1'); // GET on a hash: WRONGTYPE inside the script
    const limiter = new RedisLimiter(shared, { ownsClient: false });
    const err = await limiter.consume([{ key, capacity: 1, perSeconds: 1 }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).code).toBe('store_unavailable');
    expect((err as StoreError).cause).toBeDefined();
  });
});

describe('RedisLimiter on a private server', () => {
  let server: RedisProcess;
  let client: Redis;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterEach(() => client?.disconnect());
  afterAll(() => server.stop());

  const connect = () =>
    (client = new Redis({ port: server.port, host: '127.0.0.1', enableAutoPipelining: true, maxRetriesPerRequest: 1 }));
  const buckets = (...names: string[]): Bucket[] =>
    names.map((n) => ({ key: `${randomUUID()}:${n}`, capacity: 5, perSeconds: 60 }));
  const scriptCalls = async (c: Redis) => {
    const stats = await c.info('commandstats');
    const count = (cmd: string, field: string) =>
      Number(new RegExp(`cmdstat_${cmd}:.*?${field}=(\\d+)`).exec(stats)?.[1] ?? 0);
    return {
      calls: count('evalsha', 'calls') + count('eval', 'calls'),
      noscript: count('evalsha', 'failed_calls') + count('evalsha', 'rejected_calls'),
    };
  };

  it('decides all buckets of a call in one script, one round trip', async () => {
    const limiter = new RedisLimiter(connect(), { ownsClient: false });
    const call = buckets('a', 'b', 'c');
    await limiter.consume(call); // loads the script on this connection
    const before = await scriptCalls(client);
    const out = await limiter.consume(call);
    expect(out.buckets.map((b) => b.remaining)).toEqual([3, 3, 3]);
    expect((await scriptCalls(client)).calls - before.calls).toBe(1);
  });

  it('the calls of one turn of the event loop share one script, each decided on its own and in order', async () => {
    const limiter = new RedisLimiter(connect(), { ownsClient: false });
    await limiter.consume(buckets('warm')); // loads the script on this connection
    const before = await scriptCalls(client);
    const [shared] = buckets('shared');
    const other = buckets('other');
    const calls = [
      ...Array.from({ length: 4 }, () => limiter.consume([shared!])),
      limiter.consume([other[0]!, { ...shared!, key: other[0]!.key }]), // a key named twice: charged twice
      ...Array.from({ length: 3 }, () => limiter.consume([shared!, { ...other[0]!, capacity: 5 }])),
    ];
    const outcomes = await Promise.all(calls);
    expect((await scriptCalls(client)).calls - before.calls).toBe(1);
    expect(outcomes.slice(0, 4).map((o) => o.buckets[0]!.remaining)).toEqual([4, 3, 2, 1]);
    expect(outcomes[4]!.buckets.map((b) => b.remaining)).toEqual([3, 3]);
    // shared has 1 token left: the first of these takes it, the others are denied and take nothing from `other`
    expect(outcomes.slice(5).map((o) => o.allowed)).toEqual([true, false, false]);
    expect(outcomes.slice(5).map((o) => o.buckets.map((b) => b.remaining))).toEqual([
      [0, 2],
      [0, 2],
      [0, 2],
    ]);
    expect(outcomes[6]!.retryAfterMs).toBeGreaterThan(0);
  });

  /**
   * A BLPOP on an empty list holds the limiter's own connection for its timeout: the script sent behind it waits there,
   * as behind a slow Redis, for as long as the test says.
   */
  const holdConnection = (c: Redis, seconds: number) => c.blpop(`hold:${randomUUID()}`, seconds);
  const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

  it('calls made while a script is in flight go together as the next script, in order (group commit)', async () => {
    const limiter = new RedisLimiter(connect(), { ownsClient: false, timeoutMs: 5_000 });
    const call = [{ key: randomUUID(), capacity: 10, perSeconds: 60 }];
    await limiter.consume(call); // loads the script: the sends below are single EVALSHAs
    const before = await scriptCalls(client);
    const held = holdConnection(client, 1);
    const calls = [limiter.consume(call)];
    for (let i = 0; i < 4; i++) {
      await pause(20); // each call in an event-loop turn of its own, the first script still waiting
      calls.push(limiter.consume(call));
    }
    const outcomes = await Promise.all(calls);
    await held;
    // The first call's script, then one for the four calls made meanwhile (one script per turn would make 5).
    expect((await scriptCalls(client)).calls - before.calls).toBe(2);
    expect(outcomes.map((o) => o.buckets[0]!.remaining)).toEqual([8, 7, 6, 5, 4]);
  });

  it('calls waiting behind a script in flight get a StoreError within their own budget, then it recovers', async () => {
    const limiter = new RedisLimiter(connect(), { ownsClient: false, timeoutMs: 150 });
    const call = buckets('budget');
    await limiter.consume(call);
    const held = holdConnection(client, 2);
    const started = performance.now();
    const first = limiter.consume(call).catch((e: unknown) => e);
    await pause(20);
    const waiting = limiter.consume(call).catch((e: unknown) => e);
    expect(await first).toBeInstanceOf(StoreError);
    expect(await waiting).toBeInstanceOf(StoreError);
    // The second call's budget ran from its own batch's start, not from the end of the first one's wait (2 s).
    expect(performance.now() - started).toBeLessThan(1500);
    await held;
    expect((await limiter.consume(call)).allowed).toBe(true);
  });

  it('a batch larger than one script holds is split, nothing lost', async () => {
    // What is tested is the split, not the store budget: 5,000 calls on a loaded machine can take longer than the
    // default 500 ms, which failed this test by chance (a StoreError "no answer within 500 ms").
    const limiter = new RedisLimiter(connect(), { ownsClient: false, timeoutMs: 10_000 });
    const calls = Array.from({ length: 5000 }, (_, i) => limiter.consume(buckets(`many${i}`)));
    const outcomes = await Promise.all(calls);
    expect(outcomes.every((o) => o.allowed && o.buckets[0]!.remaining === 4)).toBe(true);
  });

  it('falls back to EVAL when the server lost the script (NOSCRIPT)', async () => {
    const limiter = new RedisLimiter(connect(), { ownsClient: false });
    const call = buckets('a');
    await limiter.consume(call);
    await limiter.consume(call); // by now the connection sends EVALSHA
    await client.script('FLUSH');
    const before = await scriptCalls(client);
    const out = await limiter.consume(call);
    expect(out).toMatchObject({ allowed: true, buckets: [{ remaining: 2 }] });
    const after = await scriptCalls(client);
    expect(after.noscript - before.noscript).toBe(1); // the EVALSHA that met NOSCRIPT
    expect(await client.script('EXISTS', SCRIPT_SHA)).toEqual([1]); // loaded again by the fallback EVAL
  });

  it('a paused server is a StoreError after the budget, and the limiter recovers', async () => {
    const limiter = new RedisLimiter(connect(), { ownsClient: false, timeoutMs: 200 });
    const call = buckets('a');
    await limiter.consume(call);
    server.pause();
    try {
      const started = performance.now();
      const err = await limiter.consume(call).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreError);
      expect((err as Error).message).toMatch(/200 ms/);
      expect(performance.now() - started).toBeLessThan(1000);
    } finally {
      server.resume();
    }
    expect((await limiter.consume(call)).allowed).toBe(true);
  });

  it('a stopped server is a StoreError', async () => {
    const own = await startRedis();
    const c = new Redis({
      port: own.port,
      host: '127.0.0.1',
      enableAutoPipelining: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    c.on('error', () => {});
    const limiter = new RedisLimiter(c, { timeoutMs: 1000 });
    await limiter.consume(buckets('a'));
    await own.stop();
    await expect(limiter.consume(buckets('a'))).rejects.toBeInstanceOf(StoreError);
    await limiter.close(); // quits (or, the server being gone, disconnects) the client it owns
  });
});
