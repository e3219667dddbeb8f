import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { request } from 'undici';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteByPrefix } from '../helpers/redis-keys.ts';
import { rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';
import { SHARED_REDIS_URL } from '../helpers/shared-redis.ts';

/**
 * Finding "Rotating identities buys fresh limits": a fresh random `x-user-id` on each request moved a client from
 * `public` (100 a minute per IP) to `default`, a fresh bucket each time, so one IP could buy any rate; the same
 * escaped /generate (30 an hour). Guards (the rule file's `guards:`) apply besides the deciding rule, per client IP:
 * 1,000 requests from one IP, each with a fresh user id, are admitted exactly up to the guard's capacity.
 */

const REQUESTS = 1000;
const GUARD = 100;

/** rules/us.yaml with its per-IP guard at GUARD a day (no refill within the test). */
function usRulesWithSmallGuard(): string {
  const file = parse(readFileSync('rules/us.yaml', 'utf8')) as { guards: { id: string; count: number; per: string }[] };
  const guards = file.guards.map((g) => (g.id === 'per-ip' ? { ...g, count: GUARD, per: '1d' } : g));
  return stringify({ ...file, guards });
}

async function rotate(gw: TestGateway, path: string, n = REQUESTS) {
  const replies: { status: number; body: string; policy: string }[] = [];
  for (let i = 0; i < n; i += 50) {
    const batch = Array.from({ length: Math.min(50, n - i) }, async () => {
      const res = await request(`${gw.url}${path}`, { method: 'POST', headers: { 'x-user-id': randomUUID() } });
      return { status: res.statusCode, body: await res.body.text(), policy: String(res.headers['ratelimit-policy']) };
    });
    replies.push(...(await Promise.all(batch)));
  }
  return replies;
}

describe.each([
  ['memory', {}],
  [
    'redis',
    {
      REDIS_URL: SHARED_REDIS_URL,
      KEY_PREFIX: `rot-${randomUUID().slice(0, 8)}`,
      // Exactness is about the guard: on a loaded machine a Redis answer can miss the 50 ms budget, and the fail-open
      // fallback would then admit from per-process buckets (this failed by chance). A store error shows as a 503.
      FAIL_MODE: 'closed',
      STORE_TIMEOUT_MS: '2000',
    },
  ],
] as const)('rotating x-user-id from one IP, %s store', (_store, env) => {
  let upstream: TestUpstream;
  let gw: TestGateway;
  let dir: ReturnType<typeof rulesDir>;
  beforeAll(async () => {
    upstream = await startUpstream();
    dir = rulesDir(usRulesWithSmallGuard());
    gw = await startTestGateway({
      ...env,
      RULES_DIR: dir.dir,
      AGENT_SERVER_URL: upstream.url,
      CONTROL_PLANE_URL: upstream.url,
    });
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
    dir?.remove();
    if ('KEY_PREFIX' in env) {
      const redis = new Redis(env.REDIS_URL);
      await deleteByPrefix(redis, `${env.KEY_PREFIX}:`);
      await redis.quit();
    }
  });

  it(`admits exactly the per-IP guard's capacity (${GUARD}) of ${REQUESTS} requests with fresh user ids`, async () => {
    const replies = await rotate(gw, '/some/path');
    const admitted = replies.filter((r) => r.status === 200);
    expect(admitted).toHaveLength(GUARD);
    expect(replies.filter((r) => r.status === 429)).toHaveLength(REQUESTS - GUARD);
    expect(upstream.seen).toHaveLength(GUARD);
    // Each fresh id is decided by `default`, with the guard as one more policy item.
    expect(admitted[0]!.policy).toBe(`"default.user-ip";q=1000;w=10, "guard.per-ip";q=${GUARD};w=86400`);
    const denied = replies.find((r) => r.status === 429)!;
    expect(JSON.parse(denied.body)).toMatchObject({ rule: 'default', category: 'Per client IP', guard: 'per-ip' });
    const line = await gw.logs.waitFor((l) => l.msg === 'request' && l.status === 429);
    expect(line).toMatchObject({ rule: 'default', guard: 'per-ip', decision: 'denied' });
    const metrics = await (await request(`http://127.0.0.1:${gw.gateway.admin.port}/metrics`)).body.text();
    expect(metrics).toContain(`gateway_guard_denials_total{guard="per-ip"} ${REQUESTS - GUARD}`);
  });
});

describe('rotating x-user-id on /generate from one IP, the shipped rules/us.yaml', () => {
  let upstream: TestUpstream;
  let gw: TestGateway;
  beforeAll(async () => {
    upstream = await startUpstream();
    gw = await startTestGateway({ AGENT_SERVER_URL: upstream.url, CONTROL_PLANE_URL: upstream.url });
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });

  it('admits exactly the generate-per-ip guard (300 an hour), not 30 per invented user', async () => {
    const replies = await rotate(gw, '/generate');
    expect(replies.filter((r) => r.status === 200)).toHaveLength(300);
    const denied = replies.find((r) => r.status === 429)!;
    expect(JSON.parse(denied.body)).toMatchObject({ rule: 'generate', guard: 'generate-per-ip' });
  });
});
