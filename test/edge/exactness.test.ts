import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rulesDir } from '../helpers/gateway.ts';
import { deleteByPrefix, keysByPrefix } from '../helpers/redis-keys.ts';
import { spawnGateway, type SpawnedGateway } from '../helpers/spawn-gateway.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';
import { SHARED_REDIS_URL, sharedRedis } from '../helpers/shared-redis.ts';

/**
 * The exactness test: two edge processes (`gateway start`) share the
 * shared Redis under a prefix of their own; a burst of 3× a bucket's
 * capacity, sent concurrently over 50 connections split across both, admits
 * exactly the capacity plus the refill the burst's duration allows.
 *
 * The refill term is a bound, not a point: tokens refill from the moment
 * Redis decides the first request to the moment it decides the last, both
 * inside [burst start, burst end] as the client measures it. So the test
 * requires count ≤ admitted ≤ count + floor(elapsed × count / per), computed
 * from the measured elapsed time, and that the upstream saw exactly the
 * admitted requests.
 */

const COUNT = 300;
const PER_SECONDS = 60;
const BURST = 3 * COUNT;
const CONNECTIONS_PER_EDGE = 25;
const PREFIX = `t-exact-${randomBytes(6).toString('hex')}`;

let rules: ReturnType<typeof rulesDir>;
let upstream: TestUpstream;
let redis: Redis;
const edges: SpawnedGateway[] = [];
const pools: Pool[] = [];

beforeAll(async () => {
  rules = rulesDir(`
- id: burst
  match: { method: POST, prefix: /burst }
  limits:
    - { by: api-key, count: ${COUNT}, per: ${PER_SECONDS}s, category: Burst }
`);
  upstream = await startUpstream((req, res) => {
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  redis = sharedRedis();
  const env = {
    REDIS_URL: SHARED_REDIS_URL,
    KEY_PREFIX: PREFIX,
    IDENTITY_SECRET: 'exactness-test-identity-secret',
    LOG_LEVEL: 'info',
    RULES_DIR: rules.dir,
    AGENT_SERVER_URL: upstream.url,
    CONTROL_PLANE_URL: upstream.url,
    // A store error must show up as a 503, never as a silent per-process fallback that would over-admit.
    FAIL_MODE: 'closed',
    STORE_TIMEOUT_MS: '2000',
  };
  const started = await Promise.allSettled([spawnGateway(env), spawnGateway(env)]);
  for (const s of started) if (s.status === 'fulfilled') edges.push(s.value);
  for (const s of started) if (s.status === 'rejected') throw s.reason;
  for (const e of edges) pools.push(new Pool(e.url, { connections: CONNECTIONS_PER_EDGE }));
});

afterAll(async () => {
  rules?.remove();
  await Promise.all(pools.map((p) => p.close()));
  await Promise.all(edges.map((e) => e.stop()));
  await upstream?.close();
  if (redis) {
    await deleteByPrefix(redis, PREFIX);
    await redis.quit();
  }
});

async function post(pool: Pool, key: string): Promise<number> {
  const res = await pool.request({ path: '/burst', method: 'POST', headers: { 'x-api-key': key } });
  await res.body.dump();
  return res.statusCode;
}

describe('exactness across two edge processes sharing Redis', () => {
  it(`a burst of ${BURST} over ${2 * CONNECTIONS_PER_EDGE} connections admits exactly ${COUNT} plus the computed refill`, async () => {
    // Warm up on another key: opens every connection of both pools and loads the script, so the burst measures the
    // limiter.
    const warm = `warm-${randomBytes(8).toString('hex')}`;
    const warmed = await Promise.all(
      pools.flatMap((p) => Array.from({ length: CONNECTIONS_PER_EDGE }, () => post(p, warm))),
    );
    expect(warmed).toEqual(Array(2 * CONNECTIONS_PER_EDGE).fill(200));

    const key = `lsv2_burst_${randomBytes(12).toString('hex')}`;
    const started = performance.now();
    const statuses = await Promise.all(Array.from({ length: BURST }, (_, i) => post(pools[i % 2]!, key)));
    const elapsedS = (performance.now() - started) / 1000;

    const admitted = statuses.filter((s) => s === 200).length;
    const denied = statuses.filter((s) => s === 429).length;
    const slack = Math.floor((elapsedS * COUNT) / PER_SECONDS);
    expect(admitted + denied, `statuses other than 200/429: ${[...new Set(statuses)].join(', ')}`).toBe(BURST);
    expect(admitted, `elapsed ${elapsedS.toFixed(3)} s allows ${slack} refilled token(s)`).toBeGreaterThanOrEqual(
      COUNT,
    );
    expect(admitted, `elapsed ${elapsedS.toFixed(3)} s allows ${slack} refilled token(s)`).toBeLessThanOrEqual(
      COUNT + slack,
    );
    expect(denied).toBe(BURST - admitted);
    expect(upstream.seen.filter((r) => r.headers['x-api-key'] === key)).toHaveLength(admitted);

    // Both edges decided part of the burst, from Redis, never from a fallback.
    for (const edge of edges) {
      const expected = CONNECTIONS_PER_EDGE + BURST / 2;
      const burstLines = () => edge.lines().filter((l) => l.msg === 'request' && l.rule === 'burst');
      // The child writes its log asynchronously: give the last lines a moment to arrive.
      for (let waited = 0; burstLines().length < expected && waited < 3000; waited += 25)
        await new Promise((r) => setTimeout(r, 25));
      const lines = burstLines();
      expect(lines).toHaveLength(expected);
      expect(lines.filter((l) => l.fellBack)).toHaveLength(0);
      expect(edge.output()).not.toContain('rate limit store failing');
    }

    // The buckets live in Redis under the prefix, keyed by digest: no raw key.
    const keys = await keysByPrefix(redis, PREFIX);
    expect(keys).toHaveLength(2);
    for (const k of keys) {
      expect(k).toMatch(new RegExp(`^${PREFIX}:us:burst:api-key:[A-Za-z0-9_-]{22}$`));
      expect(k).not.toContain(key);
      expect(k).not.toContain(warm);
    }
  });
});
