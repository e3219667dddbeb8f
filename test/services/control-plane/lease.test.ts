import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { LeaseClosedError, RedisLease } from '../../../src/services/control-plane/leases/lease.ts';
import { deleteByPrefix } from '../../helpers/redis-keys.ts';
import { sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';

/** Leases on the shared Redis (a key of this run's own): one holder at a time, handed over on release or lapse. */

const RUN = uniquePrefix('test:lease');
const redis = sharedRedis();
const log = pino({ level: 'silent' });

afterAll(async () => {
  await deleteByPrefix(redis, RUN);
  await redis.quit();
});

describe('RedisLease', () => {
  it('is held by one at a time; the other takes it once it is released', async () => {
    const key = `${RUN}:release`;
    const a = new RedisLease(redis, { key, ttlMs: 600, log });
    await a.acquired();
    const b = new RedisLease(redis, { key, ttlMs: 600, log });
    await new Promise((r) => setTimeout(r, 800));
    expect([a.held, b.held]).toEqual([true, false]);
    await a.close();
    await b.acquired();
    expect([a.held, b.held]).toEqual([false, true]);
    await b.close();
    expect(await redis.exists(key)).toBe(0);
  });

  it('lapses when its holder stops renewing; the holder then learns it lost it', async () => {
    const key = `${RUN}:lapse`;
    let lost = 0;
    // A holder that lost it stops trying (else it may take it again at its next try: it lapsed for everyone).
    const a: RedisLease = new RedisLease(redis, { key, ttlMs: 600, log, onLost: () => (lost++, void a.close()) });
    await a.acquired();
    // Another token in its place: what a holder that stalled past its ttl finds when it renews.
    await redis.set(key, 'someone-else', 'PX', 600);
    const b = new RedisLease(redis, { key, ttlMs: 600, log });
    const took = Date.now();
    await b.acquired();
    expect(Date.now() - took).toBeLessThan(1500);
    expect(lost).toBe(1);
    expect(a.held).toBe(false);
    await Promise.all([a.close(), b.close()]);
  });

  it('rejects a wait for it when closed first', async () => {
    const key = `${RUN}:closed`;
    const a = new RedisLease(redis, { key, ttlMs: 600, log });
    await a.acquired();
    const b = new RedisLease(redis, { key, ttlMs: 600, log });
    const waiting = b.acquired();
    await b.close();
    await expect(waiting).rejects.toBeInstanceOf(LeaseClosedError);
    await a.close();
  });
});
