import { randomBytes, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deferred, within } from '../helpers/async.ts';
import { rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { deleteByPrefix } from '../helpers/redis-keys.ts';
import { metricValue, scrapeMetrics } from '../helpers/scrape-metrics.ts';
import { SHARED_REDIS_URL, sharedRedis } from '../helpers/shared-redis.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';

/**
 * In-flight limits through the edge (issue 29, "done means"): N server-sent event streams of one API key are
 * admitted, the N+1st answers 429 with `qu="concurrent-requests"` until one of them ends. On the memory store (one
 * edge) and on Redis with two edges sharing the count.
 */

const N = 2;
const RULES = `
- id: streams
  match: { method: POST, path: /runs/stream }
  limits:
    - { by: api-key, concurrent: ${N}, category: Streams (API) }
- id: open
  limits:
    - { by: ip, count: 1000000, per: 1s, category: Test }
`;

/** Streams the upstream holds open until the test ends them, by the `x-stream` header the client sends. */
const holds = new Map<string, () => void>();
let upstream: TestUpstream;
let rules: ReturnType<typeof rulesDir>;
let redis: Redis;
const PREFIX = `t-inflight-${randomBytes(6).toString('hex')}`;

beforeAll(async () => {
  rules = rulesDir(RULES);
  upstream = await startUpstream(async (req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write('event: metadata\ndata: {}\n\n');
    const end = deferred();
    holds.set(String(req.headers['x-stream']), end.resolve);
    await end.promise;
    res.end('event: end\ndata: null\n\n');
  });
  redis = sharedRedis();
});

afterAll(async () => {
  for (const end of holds.values()) end();
  await upstream?.close();
  rules?.remove();
  await deleteByPrefix(redis, PREFIX);
  await redis.quit();
});

interface Opened {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: Promise<string>;
  /** The upstream ends the stream. */
  end(): void;
}

/** POST /runs/stream with `key`; resolves once the response head has arrived (the stream stays open). */
async function open(edge: TestGateway, key: string): Promise<Opened> {
  const id = randomUUID();
  const res = await within(
    request(`${edge.url}/runs/stream`, { method: 'POST', headers: { 'x-api-key': key, 'x-stream': id } }),
    10_000,
    'response head',
  );
  return {
    status: res.statusCode,
    headers: res.headers,
    text: res.body.text(),
    end: () => holds.get(id)?.(),
  };
}

/** Asks until a stream is admitted again (the slot comes back once the edge has seen the response end). */
async function admittedAgain(edge: TestGateway, key: string): Promise<Opened> {
  for (let waited = 0; waited < 5000; waited += 50) {
    const o = await open(edge, key);
    if (o.status === 200) return o;
    await o.text;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('no slot came back within 5 s');
}

function inFlightScenario(name: string, edges: () => TestGateway[]) {
  it(`${name}: ${N} streams admitted, the ${N + 1}st answers 429 (concurrent-requests) until one ends`, async () => {
    const [a, b = a] = edges();
    const key = `lsv2_${randomUUID()}`;
    const first = await open(a!, key);
    expect(first.status).toBe(200);
    expect(first.headers['ratelimit-policy']).toBe(`"streams.api-key";q=${N};qu="concurrent-requests"`);
    expect(first.headers['ratelimit']).toBe(`"streams.api-key";r=${N - 1}`);
    const second = await open(b!, key);
    expect(second.status).toBe(200);
    expect(second.headers['ratelimit']).toBe(`"streams.api-key";r=0`);

    for (const edge of [a!, b!]) {
      const denied = await open(edge, key);
      expect(denied.status).toBe(429);
      expect(denied.headers['ratelimit-policy']).toBe(`"streams.api-key";q=${N};qu="concurrent-requests"`);
      expect(denied.headers['ratelimit']).toBe(`"streams.api-key";r=0`);
      expect(denied.headers['retry-after']).toBe('1');
      expect(JSON.parse(await denied.text)).toEqual({
        detail: 'Rate limit exceeded',
        rule: 'streams',
        category: 'Streams (API)',
        retry_after: 1,
      });
    }
    // Another key has slots of its own.
    const other = await open(b!, `lsv2_${randomUUID()}`);
    expect(other.status).toBe(200);
    other.end();
    await other.text;

    first.end();
    expect(await first.text).toContain('event: end');
    const third = await admittedAgain(b!, key);
    expect(third.headers['ratelimit']).toBe(`"streams.api-key";r=0`);
    expect((await open(a!, key)).status).toBe(429);

    // A client that leaves gives its slot back too (until: response).
    second.end();
    await second.text;
    third.end();
    await third.text;
    const fourth = await admittedAgain(a!, key);
    fourth.end();
    await fourth.text;
  });
}

describe('in-flight limits through the edge, memory store', () => {
  let edge: TestGateway;
  beforeAll(async () => {
    edge = await startTestGateway({
      RULES_DIR: rules.dir,
      AGENT_SERVER_URL: upstream.url,
      CONTROL_PLANE_URL: upstream.url,
    });
  });
  afterAll(() => edge?.close());

  inFlightScenario('memory', () => [edge]);

  it('counts the slots in use per policy in gateway_inflight_slots', async () => {
    const key = `lsv2_${randomUUID()}`;
    const s = await open(edge, key);
    const port = edge.gateway.admin.port;
    expect(metricValue(await scrapeMetrics(port), 'gateway_inflight_slots', { policy: 'streams.api-key' })).toBe(1);
    s.end();
    await s.text;
    for (let waited = 0; waited < 3000; waited += 50) {
      if (metricValue(await scrapeMetrics(port), 'gateway_inflight_slots', { policy: 'streams.api-key' }) === 0) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('the gauge did not come back to 0');
  });

  it('a client that goes away mid-stream gives its slot back (until: response)', async () => {
    const key = `lsv2_${randomUUID()}`;
    const ac = new AbortController();
    const id = randomUUID();
    const res = await request(`${edge.url}/runs/stream`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'x-stream': id },
      signal: ac.signal,
    });
    expect(res.statusCode).toBe(200);
    const held = await open(edge, key);
    expect(held.headers['ratelimit']).toBe(`"streams.api-key";r=0`);
    ac.abort();
    await res.body.text().catch(() => undefined);
    const back = await admittedAgain(edge, key);
    for (const o of [held, back]) o.end();
    holds.get(id)?.();
    await Promise.all([held.text, back.text]);
  });
});

describe('in-flight limits through two edges sharing Redis', () => {
  const edges: TestGateway[] = [];
  beforeAll(async () => {
    const env = {
      REDIS_URL: SHARED_REDIS_URL,
      KEY_PREFIX: PREFIX,
      IDENTITY_SECRET: 'in-flight-test-identity-secret',
      RULES_DIR: rules.dir,
      AGENT_SERVER_URL: upstream.url,
      CONTROL_PLANE_URL: upstream.url,
      FAIL_MODE: 'closed',
      STORE_TIMEOUT_MS: '2000',
    };
    edges.push(await startTestGateway(env), await startTestGateway(env));
  });
  afterAll(() => Promise.all(edges.map((e) => e.close())));

  inFlightScenario('redis, two edges', () => edges);

  it('a burst of 3N streams over both edges admits exactly N', async () => {
    const key = `lsv2_${randomUUID()}`;
    const burst = await Promise.all(Array.from({ length: 3 * N }, (_, i) => open(edges[i % 2]!, key)));
    expect(burst.filter((o) => o.status === 200)).toHaveLength(N);
    expect(burst.filter((o) => o.status === 429)).toHaveLength(2 * N);
    for (const o of burst) o.end();
    await Promise.all(burst.map((o) => o.text));
  });
});
