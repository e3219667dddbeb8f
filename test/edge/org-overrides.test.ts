import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisKeyRegistry } from '../../src/keys/redis-registry.ts';
import type { KeyRegistry } from '../../src/keys/types.ts';
import { rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { deleteByPrefix } from '../helpers/redis-keys.ts';
import { SHARED_REDIS_URL, sharedRedis } from '../helpers/shared-redis.ts';
import { startHeldStreams, type TestUpstream } from '../helpers/upstream.ts';

/**
 * Plans per organisation (issue 29, item 4): an operator overrides a limit's numbers for one organisation at runtime,
 * on the admin listener; every edge sharing the store applies it without a reload, and it survives a restart.
 */

const TOKEN = `op-${randomBytes(12).toString('hex')}`;
const PREFIX = `t-org-overrides-${randomBytes(6).toString('hex')}`;
const KEYS_PREFIX = `${PREFIX}-keys`;
const RULES = `
- id: scarce
  match: { path: /scarce }
  limits:
    - { by: api-key, count: 2, per: 1h, category: Scarce }
- id: streams
  match: { path: /stream }
  limits:
    - { by: api-key, concurrent: 1, category: Streams }
- id: open
  limits:
    - { by: ip, count: 1000000, per: 1s, category: Test }
`;

let upstream: TestUpstream;
let rules: ReturnType<typeof rulesDir>;
let redis: Redis;
let ends: (() => void)[] = [];

beforeAll(async () => {
  rules = rulesDir(RULES);
  ({ upstream, ends } = await startHeldStreams());
  redis = sharedRedis();
});

afterAll(async () => {
  for (const e of ends) e();
  await upstream?.close();
  rules?.remove();
  await deleteByPrefix(redis, PREFIX);
  await redis.quit();
});

async function admin(gw: TestGateway, method: string, path: string, body?: unknown, token: string | null = TOKEN) {
  const res = await request(`http://127.0.0.1:${gw.gateway.admin.port}/limits/overrides${path}`, {
    method: method as 'GET',
    headers: {
      ...(token !== null && { authorization: `Bearer ${token}` }),
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, text, body: JSON.parse(text) as Record<string, unknown> };
}

async function send(gw: TestGateway, path: string, key: string) {
  const res = await request(`${gw.url}${path}`, { headers: { 'x-api-key': key } });
  await res.body.dump();
  return { status: res.statusCode, policy: String(res.headers['ratelimit-policy']) };
}

/** Polls until `check` holds (the edges poll the store; no timing is asserted, only that it happens). */
async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('plans per organisation on Redis, two edges', () => {
  const env = {
    REDIS_URL: SHARED_REDIS_URL,
    KEY_PREFIX: PREFIX,
    API_KEYS_PREFIX: KEYS_PREFIX,
    IDENTITY_SECRET: 'org-overrides-test-secret',
    KEY_CHECK: 'on',
    ADMIN_TOKEN: TOKEN,
    STORE_TIMEOUT_MS: '2000',
  };
  let a: TestGateway;
  let b: TestGateway;
  let registry: KeyRegistry;
  let acme: string;
  let other: string;
  beforeAll(async () => {
    const common = { ...env, RULES_DIR: rules.dir, AGENT_SERVER_URL: upstream.url, CONTROL_PLANE_URL: upstream.url };
    [a, b] = await Promise.all([startTestGateway(common), startTestGateway(common)]);
    registry = new RedisKeyRegistry(redis, { prefix: KEYS_PREFIX });
    acme = (await registry.createKey('acme')).key;
    other = (await registry.createKey('other')).key;
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  it('refuses a bad override with 400 and one line naming what to fix, and answers 401 without the token', async () => {
    const unknown = await admin(a, 'PUT', '/acme', { policy: 'nope.api-key', count: 5 });
    expect(unknown.status).toBe(400);
    expect(unknown.body.detail).toBe('No limit of the rules in force is named "nope.api-key"');
    expect(unknown.text).not.toContain('\n');
    expect((await admin(a, 'PUT', '/acme', { policy: 'scarce.api-key', count: 0 })).body.detail).toMatch(/"count"/);
    expect((await admin(a, 'PUT', '/acme', { policy: 'scarce.api-key', count: -3 })).status).toBe(400);
    expect((await admin(a, 'PUT', '/acme', { policy: 'streams.api-key', concurrent: 0 })).status).toBe(400);
    expect((await admin(a, 'PUT', '/acme', { policy: 'streams.api-key', count: 3 })).body.detail).toMatch(
      /in-flight limit/,
    );
    expect((await admin(a, 'PUT', '/acme', { policy: 'scarce.api-key', count: 3, per: 'soon' })).status).toBe(400);
    expect((await admin(a, 'PUT', '/acme', { policy: 'scarce.api-key', count: 5 }, null)).status).toBe(401);
    expect((await admin(a, 'GET', '')).body).toEqual({ overrides: {} });
  });

  it('applies an override set on one edge on the other without reload; other organisations keep the rule', async () => {
    const set = await admin(a, 'PUT', '/acme', { policy: 'scarce.api-key', count: 4 });
    expect(set).toMatchObject({ status: 200, body: { org: 'acme', policy: 'scarce.api-key', count: 4 } });
    // Edge b was told nothing: it sees the change by polling the store.
    await eventually(() => b.gateway.overrides.of('acme') !== undefined);
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await send(b, '/scarce', acme));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 429]);
    expect(answers[0]!.policy).toBe('"scarce.api-key";q=4;w=3600');
    const others = [];
    for (let i = 0; i < 3; i++) others.push((await send(b, '/scarce', other)).status);
    expect(others).toEqual([200, 200, 429]);
    // Shared buckets: the other edge counts the same tokens.
    expect((await send(a, '/scarce', acme)).status).toBe(429);
    // An operator reads the organisation's bucket with its numbers.
    const bucket = await request(
      `http://127.0.0.1:${a.gateway.admin.port}/limits/buckets?policy=scarce.api-key&api_key=${acme}&org=acme`,
      { headers: { authorization: `Bearer ${TOKEN}` } },
    );
    expect(await bucket.body.json()).toMatchObject({ count: 4, remaining: 0 });
    expect((await admin(b, 'GET', '/acme')).body).toEqual({
      org: 'acme',
      overrides: { 'scarce.api-key': { count: 4 } },
    });
  });

  it('raises an in-flight limit for one organisation on both edges', async () => {
    expect((await admin(b, 'PUT', '/acme', { policy: 'streams.api-key', concurrent: 2 })).status).toBe(200);
    await eventually(() => a.gateway.overrides.of('acme')?.['streams.api-key'] !== undefined);
    const first = await request(`${a.url}/stream`, { headers: { 'x-api-key': acme } });
    const second = await request(`${b.url}/stream`, { headers: { 'x-api-key': acme } });
    expect([first.statusCode, second.statusCode]).toEqual([200, 200]);
    expect(second.headers['ratelimit-policy']).toBe('"streams.api-key";q=2;qu="concurrent-requests"');
    expect((await send(a, '/stream', acme)).status).toBe(429);
    const held = await request(`${a.url}/stream`, { headers: { 'x-api-key': other } });
    expect(held.statusCode).toBe(200);
    expect((await send(b, '/stream', other)).status).toBe(429);
    for (const e of ends.splice(0)) e();
    await Promise.all([first.body.dump(), second.body.dump(), held.body.dump()]);
  });

  it('survives a restart of an edge, and an unset brings the rule back everywhere', async () => {
    await b.close();
    b = await startTestGateway({
      ...env,
      RULES_DIR: rules.dir,
      AGENT_SERVER_URL: upstream.url,
      CONTROL_PLANE_URL: upstream.url,
    });
    // Read at boot, before the edge serves.
    expect(b.gateway.overrides.of('acme')).toEqual({
      'scarce.api-key': { count: 4, perSeconds: null },
      'streams.api-key': { concurrent: 2 },
    });
    expect((await send(b, '/scarce', acme)).policy).toBe('"scarce.api-key";q=4;w=3600');

    const gone = await admin(a, 'DELETE', '/acme?policy=scarce.api-key');
    expect(gone.body).toMatchObject({ removed: 1 });
    await eventually(() => b.gateway.overrides.of('acme')?.['scarce.api-key'] === undefined);
    expect((await send(b, '/scarce', acme)).policy).toBe('"scarce.api-key";q=2;w=3600');
    expect((await admin(a, 'DELETE', '/acme')).body).toMatchObject({ removed: 1 });
    await eventually(() => b.gateway.overrides.of('acme') === undefined);
    const audit = await a.logs.waitFor((l) => l.audit === 'override-set' && l.org === 'acme');
    expect(audit).toMatchObject({ policy: 'scarce.api-key', count: 4 });
  });
});

describe('plans per organisation on the memory store, one edge', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      RULES_DIR: rules.dir,
      ADMIN_TOKEN: TOKEN,
      // The bundled control plane: its memory key registry is the one the edge resolves keys with.
      AGENT_SERVER_URL: upstream.url,
      KEY_CHECK: 'on',
    });
  });
  afterAll(() => gw?.close());

  it('applies an override to the organisation of the key, at once', async () => {
    const registry = gw.gateway.keys!;
    const key = (await registry.createKey('acme')).key;
    const stranger = (await registry.createKey('other')).key;
    expect((await admin(gw, 'PUT', '/acme', { policy: 'scarce.api-key', count: 3, per: '1m' })).status).toBe(200);
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await send(gw, '/scarce', key));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expect(answers[0]!.policy).toBe('"scarce.api-key";q=3;w=60');
    expect((await send(gw, '/scarce', stranger)).policy).toBe('"scarce.api-key";q=2;w=3600');
  });
});
