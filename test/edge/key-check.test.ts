import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyCheck } from '../../src/edge/key-check.ts';
import { generateKey } from '../../src/keys/key-format.ts';
import { MemoryKeyRegistry } from '../../src/keys/memory-registry.ts';
import { RedisKeyRegistry } from '../../src/keys/redis-registry.ts';
import { loadSettings } from '../../src/settings/settings.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';
import { deleteByPrefix } from '../helpers/redis-keys.ts';
import { SHARED_REDIS_URL } from '../helpers/shared-redis.ts';

describe('keyCheck', () => {
  it('asks the registry once per known key, then answers from memory', async () => {
    const registry = new MemoryKeyRegistry();
    const { key } = await registry.createKey('acme');
    let asked = 0;
    const check = keyCheck({ findKey: (k) => (asked++, registry.findKey(k)) });
    expect(await check(key)).toBe(true);
    expect(check(key)).toBe(true); // a plain boolean: no promise, no lookup
    expect(asked).toBe(1);
  });

  it('keeps an unknown key unknown for unknownForMs, then asks again (a key created meanwhile then works)', async () => {
    const registry = new MemoryKeyRegistry();
    let now = 0;
    let asked = 0;
    const created = await registry.createKey('acme');
    const known = new Set<string>();
    const check = keyCheck(
      { findKey: async (k) => (asked++, known.has(k) ? registry.findKey(k) : null) },
      { unknownForMs: 1000, now: () => now },
    );
    expect(await check(created.key)).toBe(false);
    known.add(created.key);
    now = 999;
    expect(check(created.key)).toBe(false);
    expect(asked).toBe(1);
    now = 1001;
    expect(await check(created.key)).toBe(true);
    expect(asked).toBe(2);
  });

  it('asks again about a known key after knownForMs: a revoked key stops being known', async () => {
    const registry = new MemoryKeyRegistry();
    const created = await registry.createKey('acme');
    let now = 0;
    const check = keyCheck(registry, { knownForMs: 1000, now: () => now });
    expect(await check(created.key)).toBe(true);
    expect(await registry.revokeKey(created.record.id)).toBeTruthy();
    now = 999;
    expect(check(created.key)).toBe(true); // remembered
    now = 1001;
    expect(await check(created.key)).toBe(false);
  });

  it('lets a key through, unremembered, when the registry cannot answer', async () => {
    let asked = 0;
    const check = keyCheck({ findKey: () => (asked++, Promise.reject(new Error('redis down'))) });
    const key = generateKey();
    expect(await check(key)).toBe(true);
    expect(await check(key)).toBe(true);
    expect(asked).toBe(2);
  });

  it('answers a value that cannot be a key unknown at once, without asking or remembering it', () => {
    let asked = 0;
    const check = keyCheck({ findKey: async () => (asked++, null) }, { size: 1 });
    for (const value of ['lgk_whatever', 'gwk_short', `gwk_${'a'.repeat(44)}`, 'x'.repeat(16_384)])
      expect(check(value)).toBe(false);
    expect(asked).toBe(0);
  });
});

/**
 * KEY_CHECK=on at the edge, with the platform's key registry in Redis: a
 * key the registry holds is counted as itself; any other key is never a
 * bucket of its own: the request is counted as if it carried no key (by
 * x-user-id and IP, or by IP) and forwarded, so rotating fake keys buys no
 * fresh buckets and the upstream still authenticates.
 */
describe('KEY_CHECK=on at the edge', () => {
  const keysPrefix = `test-keys-${randomUUID()}`;
  let redis: Redis;
  let upstream: TestUpstream;
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    redis = new Redis(SHARED_REDIS_URL);
    key = (await new RedisKeyRegistry(redis, { prefix: keysPrefix }).createKey('acme')).key;
    upstream = await startUpstream();
    gw = await startTestGateway({
      KEY_CHECK: 'on',
      REDIS_URL: SHARED_REDIS_URL,
      KEY_PREFIX: `kc${randomUUID().slice(0, 8)}`,
      API_KEYS_PREFIX: keysPrefix,
      AGENT_SERVER_URL: upstream.url,
      CONTROL_PLANE_URL: upstream.url,
      // On a loaded machine a Redis answer can miss the 50 ms budget; the fail-open fallback would then admit from
      // per-process buckets and the public bucket would not empty (this failed by chance). A store error is a 503.
      FAIL_MODE: 'closed',
      STORE_TIMEOUT_MS: '2000',
    });
  });

  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
    await deleteByPrefix(redis, `${keysPrefix}:`);
    await redis.quit();
  });

  const send = async (path: string, headers: Record<string, string>) => {
    const res = await request(`${gw.url}${path}`, { method: 'POST', headers });
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
  };

  it('forwards a known key, counted under its own api-key bucket', async () => {
    const res = await send('/runs/query', { 'x-api-key': key });
    expect(res.status).toBe(200);
    expect(res.headers['ratelimit-policy']).toContain('"runs-query.api-key"');
    expect(upstream.seen.some((r) => r.headers['x-api-key'] === key)).toBe(true);
  });

  it('forwards an unknown key (the upstream authenticates), counted as if it carried no key: by user and IP', async () => {
    const fake = `lgk_${randomUUID()}`;
    const res = await send('/runs/query', { 'x-api-key': fake, 'x-user-id': 'u1' });
    expect(res.status).toBe(200);
    expect(res.headers['ratelimit-policy']).toMatch(/^"runs-query\.user-ip";q=300;w=10, "guard\.per-ip"/);
    expect(upstream.seen.some((r) => r.headers['x-api-key'] === fake)).toBe(true);
    const line = await gw.logs.waitFor((l) => l.msg === 'request' && l.rule === 'runs-query' && l.status === 200);
    expect(line).toMatchObject({ rule: 'runs-query', decision: 'allowed' });
    expect(gw.logs.raw()).not.toContain(fake);
  });

  it('rotating fake keys from one client share its public bucket: 429 once it is empty', async () => {
    // 150 at once: the bucket (100 a minute) refills one token per 600 ms, and forwarded requests take a while.
    const replies = await Promise.all(
      Array.from({ length: 150 }, () => send('/some/path', { 'x-api-key': `lgk_${randomUUID()}` })),
    );
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
  });
});

describe('KEY_CHECK setting', () => {
  it('is off by default when the upstreams are configured: any key is counted as itself', async () => {
    const upstream = await startUpstream();
    const gw = await startTestGateway({ AGENT_SERVER_URL: upstream.url, CONTROL_PLANE_URL: upstream.url });
    try {
      const res = await request(`${gw.url}/runs/query`, {
        method: 'POST',
        headers: { 'x-api-key': `made-up-${randomUUID()}` },
      });
      await res.body.dump();
      expect(res.statusCode).toBe(200);
    } finally {
      await gw.close();
      await upstream.close();
    }
  });

  it('on with an external control plane and no REDIS_URL fails at boot (loading the settings), naming KEY_CHECK', () => {
    expect(() =>
      loadSettings({
        KEY_CHECK: 'on',
        CONTROL_PLANE_URL: 'http://127.0.0.1:1',
        AGENT_SERVER_URL: 'http://127.0.0.1:1',
        PORT: '0',
        ADMIN_PORT: '0',
      }),
    ).toThrow(/^KEY_CHECK: /);
  });

  it('rejects a value other than on or off', () => {
    expect(() => loadSettings({ KEY_CHECK: 'maybe' })).toThrow(/^KEY_CHECK: must be one of on, off/);
  });
});
