import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';
import { fresh, usEdge } from './us-edge.ts';

/**
 * Limits through the real edge: the shipped US rules, the memory store, a
 * real upstream that records what reached it (us-edge.ts). Each test uses
 * identities of its own, so the tests share one gateway without sharing
 * buckets. (Paths and malformed requests: requests.test.ts; request ids and
 * the request log: request-id-and-log.test.ts.)
 */

const edge = usEdge();
/** The shipped guards (rules/us.yaml `guards:`): every response of a decided request lists them after the rule's. */
const PER_IP_POLICY = '"guard.per-ip";q=20000;w=10';
const PER_IP_ITEM = String.raw`"guard\.per-ip";r=\d+;t=[01]`;
const GENERATE_GUARDS = String.raw`${PER_IP_ITEM}, "guard\.generate-per-ip";r=\d+;t=\d+`;
const { send, seenWith } = edge;

describe('rate-limit headers', () => {
  it('a limited response carries RateLimit-Policy and RateLimit as draft-ietf-httpapi-ratelimit-headers-11 writes them', async () => {
    const res = await send('/runs/query', { 'x-api-key': fresh('key') });
    expect(res.status).toBe(200);
    // The shipped files' per-IP guard is one more item (its r depends on this file's other requests from 127.0.0.1).
    expect(res.headers['ratelimit-policy']).toBe(`"runs-query.api-key";q=15;w=10, ${PER_IP_POLICY}`);
    expect(res.headers['ratelimit']).toMatch(new RegExp(`^"runs-query\\.api-key";r=14;t=1, ${PER_IP_ITEM}$`));
    expect(res.headers['retry-after']).toBeUndefined();
  });

  it('lists one item per applied bucket when both x-api-key and x-user-id are present', async () => {
    const res = await send('/runs/query', { 'x-api-key': fresh('key'), 'x-user-id': fresh('user') });
    expect(res.status).toBe(200);
    expect(res.headers['ratelimit-policy']).toBe(
      `"runs-query.api-key";q=15;w=10, "runs-query.user-ip";q=300;w=10, ${PER_IP_POLICY}`,
    );
    expect(res.headers['ratelimit']).toMatch(
      new RegExp(`^"runs-query\\.api-key";r=14;t=1, "runs-query\\.user-ip";r=299;t=1, ${PER_IP_ITEM}$`),
    );
  });
});

describe('denial', () => {
  it('the 16th POST /runs/query with one key in a burst answers 429 with Retry-After and the JSON body; the upstream never sees it', async () => {
    const key = fresh('key');
    const started = performance.now();
    const burst = await Promise.all(Array.from({ length: 15 }, () => send('/runs/query', { 'x-api-key': key })));
    expect(burst.map((r) => r.status)).toEqual(Array(15).fill(200));

    const deniedId = fresh('denied');
    const res = await send('/runs/query', { 'x-api-key': key, 'x-request-id': deniedId });
    expect(
      performance.now() - started,
      'the burst outlasted one refill interval (667 ms): the machine is too slow for this test',
    ).toBeLessThan(667);
    expect(res.status).toBe(429);
    const retryAfter = res.headers['retry-after'];
    expect(retryAfter).toMatch(/^\d+$/);
    const seconds = Number(retryAfter);
    expect(seconds).toBeGreaterThanOrEqual(1);
    // One token refills in 10 s / 15 = 667 ms, so "rounded up" is exactly 1.
    expect(seconds).toBe(1);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.text).toBe(
      JSON.stringify({
        detail: 'Rate limit exceeded',
        rule: 'runs-query',
        category: 'Run query (API)',
        retry_after: seconds,
      }),
    );
    expect(res.headers['ratelimit-policy']).toBe(`"runs-query.api-key";q=15;w=10, ${PER_IP_POLICY}`);
    expect(res.headers['ratelimit']).toMatch(new RegExp(`^"runs-query\\.api-key";r=0;t=1, ${PER_IP_ITEM}$`));

    expect(seenWith('x-api-key', key)).toHaveLength(15);
    expect(seenWith('x-request-id', deniedId)).toHaveLength(0);
  });

  it('a burst of 16 concurrent requests admits exactly 15', async () => {
    const key = fresh('key');
    const started = performance.now();
    const burst = await Promise.all(Array.from({ length: 16 }, () => send('/runs/query', { 'x-api-key': key })));
    expect(performance.now() - started, 'the burst outlasted one refill interval (667 ms)').toBeLessThan(667);
    expect(burst.filter((r) => r.status === 200)).toHaveLength(15);
    expect(burst.filter((r) => r.status === 429)).toHaveLength(1);
    expect(seenWith('x-api-key', key)).toHaveLength(15);
  });

  // /generate rather than /runs/query: its user-ip bucket refills one token per
  // 120 s, so "remaining unchanged" is an exact count, not a race with refill.
  it('a denied request takes no token from its other bucket (api-key exhausted, user-ip untouched)', async () => {
    const key = fresh('key');
    const user = fresh('user');
    for (let i = 0; i < 30; i++) expect((await send('/generate', { 'x-api-key': key })).status).toBe(200);

    const before = await send('/generate', { 'x-user-id': user });
    expect(before.status).toBe(200);
    expect(before.headers['ratelimit']).toMatch(new RegExp(`^"generate\\.user-ip";r=29;t=120, ${GENERATE_GUARDS}$`));

    for (let i = 0; i < 5; i++) {
      const denied = await send('/generate', { 'x-api-key': key, 'x-user-id': user });
      expect(denied.status).toBe(429);
      expect(denied.headers['ratelimit']).toMatch(
        new RegExp(`^"generate\\.api-key";r=0;t=\\d+, "generate\\.user-ip";r=29;t=\\d+, ${GENERATE_GUARDS}$`),
      );
      expect(JSON.parse(denied.text)).toMatchObject({ rule: 'generate', category: 'Generation' });
    }

    const after = await send('/generate', { 'x-user-id': user });
    expect(after.status).toBe(200);
    expect(after.headers['ratelimit']).toMatch(new RegExp(`^"generate\\.user-ip";r=28;t=120, ${GENERATE_GUARDS}$`));
  });

  it('different api keys have independent buckets', async () => {
    const spent = fresh('key');
    await Promise.all(Array.from({ length: 15 }, () => send('/runs/query', { 'x-api-key': spent })));
    expect((await send('/runs/query', { 'x-api-key': spent })).status).toBe(429);

    const other = await send('/runs/query', { 'x-api-key': fresh('key') });
    expect(other.status).toBe(200);
    expect(other.headers['ratelimit']).toMatch(new RegExp(`^"runs-query\\.api-key";r=14;t=1, ${PER_IP_ITEM}$`));
    expect((await send('/runs/query', { 'x-api-key': spent })).status).toBe(429);
  });
});

describe('shadow rules', () => {
  let shadowUpstream: TestUpstream;
  let shadowGw: TestGateway;
  let rules: ReturnType<typeof rulesDir>;

  beforeAll(async () => {
    rules = rulesDir(`
- id: trial
  shadow: true
  match: { prefix: /trial }
  limits:
    - { by: api-key, count: 2, per: 3600s, category: Trial }
- id: public
  limits:
    - { by: ip, count: 1000, per: 60s, category: Public }
`);
    shadowUpstream = await startUpstream();
    shadowGw = await startTestGateway({
      RULES_DIR: rules.dir,
      AGENT_SERVER_URL: shadowUpstream.url,
      CONTROL_PLANE_URL: shadowUpstream.url,
    });
  });

  afterAll(async () => {
    rules?.remove();
    await shadowGw?.close();
    await shadowUpstream?.close();
  });

  it('never denies, reports r=0 and logs "shadow-denied" once the bucket is empty', async () => {
    const key = fresh('key');
    const results = [];
    for (let i = 0; i < 4; i++) {
      const id = fresh('shadow');
      const res = await request(`${shadowGw.url}/trial/run`, {
        method: 'GET',
        headers: { 'x-api-key': key, 'x-request-id': id },
      });
      await res.body.text();
      results.push({
        id,
        status: res.statusCode,
        ratelimit: res.headers['ratelimit'],
        retryAfter: res.headers['retry-after'],
      });
    }
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(results.map((r) => r.ratelimit)).toEqual([
      '"trial.api-key";r=1;t=1800',
      '"trial.api-key";r=0;t=1800',
      expect.stringMatching(/^"trial\.api-key";r=0;t=\d+$/),
      expect.stringMatching(/^"trial\.api-key";r=0;t=\d+$/),
    ]);
    expect(results.map((r) => r.retryAfter)).toEqual([undefined, undefined, undefined, undefined]);
    expect(shadowUpstream.seen.filter((r) => r.headers['x-api-key'] === key)).toHaveLength(4);

    const decisions = [];
    for (const r of results) decisions.push((await shadowGw.logs.requestLine(r.id)).decision);
    expect(decisions).toEqual(['allowed', 'allowed', 'shadow-denied', 'shadow-denied']);
    expect(await shadowGw.logs.requestLine(results[2]!.id)).toMatchObject({
      rule: 'trial',
      status: 200,
      upstream: 'agent-server',
    });
  });
});
