import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { closedPort, startUpstream } from '../helpers/upstream.ts';
import { rulesDir, startTestGateway } from '../helpers/gateway.ts';
import { deleteByPrefix, keysByPrefix } from '../helpers/redis-keys.ts';
import { SHARED_REDIS_URL, sharedRedis } from '../helpers/shared-redis.ts';

/**
 * Boot waits (bounded) for the store's first connection before it says
 * "gateway listening"; a store that refuses connections does not hold it up.
 */

const PREFIX = `t-boot-${randomBytes(6).toString('hex')}`;
const redis = sharedRedis({ lazyConnect: true });
const rules = rulesDir(`
- id: boot
  limits:
    - { by: api-key, count: 10, per: 3600s, category: Boot }
`);

afterAll(async () => {
  await deleteByPrefix(redis, PREFIX);
  await redis.quit();
  rules.remove();
});

describe('store at boot', () => {
  /**
   * The gateway said "gateway listening" before its Redis client had
   * connected. With the offline queue off, every request in that window was a
   * store error: 503 with FAIL_MODE=closed, or a silent per-process memory
   * bucket with FAIL_MODE=open (so two fresh edges over-admitted).
   */
  describe('regression: requests between "gateway listening" and the first Redis connection were store errors', () => {
    it('the first requests after "gateway listening" are decided by Redis, not a store error', async () => {
      const upstream = await startUpstream();
      const gw = await startTestGateway({
        REDIS_URL: SHARED_REDIS_URL,
        KEY_PREFIX: PREFIX,
        RULES_DIR: rules.dir,
        FAIL_MODE: 'closed',
        AGENT_SERVER_URL: upstream.url,
        CONTROL_PLANE_URL: upstream.url,
      });
      try {
        const key = `k-${randomBytes(8).toString('hex')}`;
        // Sent at once, concurrently, with no warm-up.
        const results = await Promise.all(
          Array.from({ length: 3 }, async () => {
            const res = await request(`${gw.url}/anything`, { headers: { 'x-api-key': key } });
            await res.body.dump();
            return { status: res.statusCode, ratelimit: res.headers['ratelimit'] };
          }),
        );
        expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
        expect(results.map((r) => r.ratelimit).sort()).toEqual([
          '"boot.api-key";r=7;t=360',
          '"boot.api-key";r=8;t=360',
          '"boot.api-key";r=9;t=360',
        ]);
        expect(gw.logs.raw()).not.toContain('rate limit store failing');
        expect(await keysByPrefix(redis, PREFIX)).toHaveLength(1);
      } finally {
        await gw.close();
        await upstream.close();
      }
    });
  });

  it('a Redis that refuses connections does not hold boot up: the gateway serves under FAIL_MODE and says so', async () => {
    const port = await closedPort();
    const upstream = await startUpstream();
    const started = performance.now();
    const gw = await startTestGateway({
      REDIS_URL: `redis://127.0.0.1:${port}`,
      KEY_PREFIX: PREFIX,
      RULES_DIR: rules.dir,
      FAIL_MODE: 'open',
      AGENT_SERVER_URL: upstream.url,
      CONTROL_PLANE_URL: upstream.url,
    });
    try {
      expect(performance.now() - started).toBeLessThan(2000);
      expect(gw.logs.lines().some((l) => l.msg === 'rate limit store not connected at boot')).toBe(true);
      const res = await request(`${gw.url}/anything`, { headers: { 'x-api-key': 'k' } });
      await res.body.dump();
      expect(res.statusCode).toBe(200); // open: the fallback bucket decides
      expect(res.headers['ratelimit']).toBe('"boot.api-key";r=9;t=360');
    } finally {
      await gw.close();
      await upstream.close();
    }
  });
});
