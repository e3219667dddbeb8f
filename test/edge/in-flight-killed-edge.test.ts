import { randomBytes, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rulesDir } from '../helpers/gateway.ts';
import { deleteByPrefix, keysByPrefix } from '../helpers/redis-keys.ts';
import { SHARED_REDIS_URL, sharedRedis } from '../helpers/shared-redis.ts';
import { spawnGateway, type SpawnedGateway } from '../helpers/spawn-gateway.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';

/**
 * A killed edge's in-flight slots come back within the lease: two `gateway start` processes share Redis with a short
 * SLOT_LEASE_MS; one holds every slot of a key in open streams and is killed (SIGKILL: no release, no goodbye); the
 * other admits the key again once the lease has passed, and not before the kill.
 */

const LEASE_MS = 1000;
const PREFIX = `t-inflight-kill-${randomBytes(6).toString('hex')}`;
let upstream: TestUpstream;
let rules: ReturnType<typeof rulesDir>;
let redis: Redis;
const edges: SpawnedGateway[] = [];

beforeAll(async () => {
  rules = rulesDir(`
- id: streams
  match: { method: POST, path: /runs/stream }
  limits:
    - { by: api-key, concurrent: 2, category: Streams (API) }
`);
  // Streams that never end by themselves.
  upstream = await startUpstream((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('event: metadata\ndata: {}\n\n');
    res.on('close', () => res.end());
  });
  redis = sharedRedis();
  const env = {
    REDIS_URL: SHARED_REDIS_URL,
    KEY_PREFIX: PREFIX,
    IDENTITY_SECRET: 'killed-edge-test-secret',
    RULES_DIR: rules.dir,
    AGENT_SERVER_URL: upstream.url,
    CONTROL_PLANE_URL: upstream.url,
    FAIL_MODE: 'closed',
    STORE_TIMEOUT_MS: '2000',
    SLOT_LEASE_MS: String(LEASE_MS),
  };
  const started = await Promise.allSettled([spawnGateway(env), spawnGateway(env)]);
  for (const s of started) if (s.status === 'fulfilled') edges.push(s.value);
  for (const s of started) if (s.status === 'rejected') throw s.reason;
});

afterAll(async () => {
  await Promise.all(edges.map((e) => e.kill()));
  await upstream?.close();
  rules?.remove();
  await deleteByPrefix(redis, PREFIX);
  await redis.quit();
});

async function post(url: string, key: string, signal?: AbortSignal) {
  const res = await request(`${url}/runs/stream`, { method: 'POST', headers: { 'x-api-key': key }, signal });
  if (res.statusCode !== 200) await res.body.dump();
  return res;
}

describe('a killed edge', () => {
  it('its slots come back within the lease, not before', async () => {
    const [doomed, survivor] = edges as [SpawnedGateway, SpawnedGateway];
    const key = `lsv2_${randomUUID()}`;
    const held = [await post(doomed.url, key), await post(doomed.url, key)];
    expect(held.map((r) => r.statusCode)).toEqual([200, 200]);
    for (const r of held) r.body.on('error', () => undefined).resume();
    // Held, and kept held by the live edge's renewals across several leases.
    await new Promise((r) => setTimeout(r, LEASE_MS * 2));
    expect((await post(survivor.url, key)).statusCode).toBe(429);
    const slotKeys = (await keysByPrefix(redis, PREFIX)).filter((k) => k.includes(':streams.in-flight:'));
    expect(slotKeys).toHaveLength(1);
    expect(await redis.zcard(slotKeys[0]!)).toBe(2);

    await doomed.kill();
    const killedAt = performance.now();
    let admitted = false;
    while (!admitted && performance.now() - killedAt < LEASE_MS * 5) {
      const ac = new AbortController();
      const res = await post(survivor.url, key, ac.signal);
      admitted = res.statusCode === 200;
      ac.abort();
      await res.body.dump().catch(() => undefined);
      if (!admitted) await new Promise((r) => setTimeout(r, 100));
    }
    expect(admitted, 'the dead edge’s slots came back').toBe(true);
  });
});
