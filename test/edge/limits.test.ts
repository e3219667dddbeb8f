import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { head, rawRequest } from '../helpers/raw-http.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';

/**
 * Limits through the real edge: the shipped US rules, the memory store, a
 * real upstream that records what reached it. Each test uses identities of
 * its own, so the tests share one gateway without sharing buckets.
 */

let upstream: TestUpstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startUpstream();
  gw = await startTestGateway({ AGENT_SERVER_URL: upstream.url, CONTROL_PLANE_URL: upstream.url });
  // Warm up (connections to both sides, JIT) so a 15-request burst takes tens of ms: the
  // runs-query api-key bucket refills a token every 667 ms, and the burst tests count on
  // none arriving mid-burst.
  await Promise.all(Array.from({ length: 20 }, () => send('/runs/query', { 'x-api-key': fresh('warm-up') })));
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

const fresh = (label: string) => `${label}-${randomUUID()}`;

async function send(path: string, headers: Record<string, string> = {}, method = 'POST') {
  const res = await request(`${gw.url}${path}`, { method, headers });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text };
}

const seenWith = (name: string, value: string) => upstream.seen.filter((r) => r.headers[name] === value);

describe('rate-limit headers', () => {
  it('a limited response carries RateLimit-Policy and RateLimit exactly as DESIGN.md says', async () => {
    const res = await send('/runs/query', { 'x-api-key': fresh('key') });
    expect(res.status).toBe(200);
    expect(res.headers['ratelimit-policy']).toBe('"runs-query.api-key";q=15;w=10');
    expect(res.headers['ratelimit']).toBe('"runs-query.api-key";r=14;t=1');
    expect(res.headers['retry-after']).toBeUndefined();
  });

  it('lists one item per applied bucket when both x-api-key and x-user-id are present', async () => {
    const res = await send('/runs/query', { 'x-api-key': fresh('key'), 'x-user-id': fresh('user') });
    expect(res.status).toBe(200);
    expect(res.headers['ratelimit-policy']).toBe('"runs-query.api-key";q=15;w=10, "runs-query.user-ip";q=300;w=10');
    expect(res.headers['ratelimit']).toBe('"runs-query.api-key";r=14;t=1, "runs-query.user-ip";r=299;t=1');
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
    expect(res.headers['ratelimit-policy']).toBe('"runs-query.api-key";q=15;w=10');
    expect(res.headers['ratelimit']).toBe('"runs-query.api-key";r=0;t=1');

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
    expect(before.headers['ratelimit']).toBe('"generate.user-ip";r=29;t=120');

    for (let i = 0; i < 5; i++) {
      const denied = await send('/generate', { 'x-api-key': key, 'x-user-id': user });
      expect(denied.status).toBe(429);
      expect(denied.headers['ratelimit']).toMatch(/^"generate\.api-key";r=0;t=\d+, "generate\.user-ip";r=29;t=\d+$/);
      expect(JSON.parse(denied.text)).toMatchObject({ rule: 'generate', category: 'Generation' });
    }

    const after = await send('/generate', { 'x-user-id': user });
    expect(after.status).toBe(200);
    expect(after.headers['ratelimit']).toBe('"generate.user-ip";r=28;t=120');
  });

  it('different api keys have independent buckets', async () => {
    const spent = fresh('key');
    await Promise.all(Array.from({ length: 15 }, () => send('/runs/query', { 'x-api-key': spent })));
    expect((await send('/runs/query', { 'x-api-key': spent })).status).toBe(429);

    const other = await send('/runs/query', { 'x-api-key': fresh('key') });
    expect(other.status).toBe(200);
    expect(other.headers['ratelimit']).toBe('"runs-query.api-key";r=14;t=1');
    expect((await send('/runs/query', { 'x-api-key': spent })).status).toBe(429);
  });
});

describe('paths', () => {
  for (const spelled of ['/foo/../runs/query', '//runs//query', '/runs/./query', '/%72uns/query']) {
    it(`${spelled} is limited as runs-query and forwarded as /runs/query with its query string`, async () => {
      const key = fresh('key');
      const res = await rawRequest(
        gw.port,
        head(`POST ${spelled}?a=1&b=%zz HTTP/1.1`, [
          ['Host', 'edge.test'],
          ['x-api-key', key],
          ['Content-Length', '0'],
          ['Connection', 'close'],
        ]),
      );
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-policy']).toEqual(['"runs-query.api-key";q=15;w=10']);
      const seen = seenWith('x-api-key', key);
      expect(seen.map((r) => r.url)).toEqual(['/runs/query?a=1&b=%zz']);
    });
  }

  it('invalid percent-encoding in the path answers 400 JSON {detail, code} and reaches no upstream', async () => {
    const key = fresh('key');
    const res = await rawRequest(
      gw.port,
      head('POST /runs/%zzquery HTTP/1.1', [
        ['Host', 'edge.test'],
        ['x-api-key', key],
        ['Content-Length', '0'],
      ]),
    );
    expect(res.status).toBe(400);
    const body = res.json() as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['code', 'detail']);
    expect(body.code).toBe('invalid_path');
    expect(body.detail).toEqual(expect.any(String));
    expect(seenWith('x-api-key', key)).toHaveLength(0);
    // The process keeps serving.
    expect((await send('/runs/query', { 'x-api-key': key })).status).toBe(200);
  });

  it('a repeated x-api-key header answers 400 and reaches no upstream', async () => {
    const a = fresh('key');
    const b = fresh('key');
    const res = await rawRequest(
      gw.port,
      head('POST /runs/query HTTP/1.1', [
        ['Host', 'edge.test'],
        ['x-api-key', a],
        ['x-api-key', b],
        ['Content-Length', '0'],
      ]),
    );
    expect(res.status).toBe(400);
    expect(res.json()).toEqual({ detail: expect.any(String), code: 'repeated_identity_header' });
    expect(upstream.seen.filter((r) => String(r.headers['x-api-key']).includes(a))).toHaveLength(0);
  });
});

describe('malformed requests get a 4xx and the process keeps serving', () => {
  for (const [what, raw, status] of [
    ['an invalid method', 'G(T /runs/query HTTP/1.1\r\nHost: edge.test\r\n\r\n', 400],
    ['an absurd header size', `GET /info HTTP/1.1\r\nHost: edge.test\r\nx-big: ${'a'.repeat(64 * 1024)}\r\n\r\n`, 431],
    [
      'a request target that is not a path',
      'GET runs/query HTTP/1.1\r\nHost: edge.test\r\nConnection: close\r\n\r\n',
      400,
    ],
  ] as const) {
    it(`${what} → ${status}`, async () => {
      const res = await rawRequest(gw.port, raw);
      expect(res.status).toBe(status);
      const after = await send('/runs/query', { 'x-api-key': fresh('key') });
      expect(after.status).toBe(200);
    });
  }
});

describe('request id', () => {
  it('a sane x-request-id is echoed to the client and forwarded upstream', async () => {
    const id = `req-${randomUUID()}.a_b:c`;
    const res = await send('/runs/query', { 'x-api-key': fresh('key'), 'x-request-id': id });
    expect(res.status).toBe(200);
    expect(res.headers['x-request-id']).toBe(id);
    expect(seenWith('x-request-id', id)).toHaveLength(1);
  });

  for (const [what, insane] of [
    ['300 characters', 'a'.repeat(300)],
    ['spaces', 'two words'],
    ['a quote and a comma', 'x",y'],
  ] as const) {
    it(`an x-request-id with ${what} is replaced by a fresh one, echoed and forwarded`, async () => {
      const key = fresh('key');
      const res = await send('/runs/query', { 'x-api-key': key, 'x-request-id': insane });
      expect(res.status).toBe(200);
      const minted = res.headers['x-request-id'];
      expect(minted).not.toBe(insane);
      expect(minted).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(seenWith('x-api-key', key).map((r) => r.headers['x-request-id'])).toEqual([minted]);
    });
  }

  it('a 429 carries the request id too', async () => {
    const key = fresh('key');
    await Promise.all(Array.from({ length: 15 }, () => send('/runs/query', { 'x-api-key': key })));
    const id = fresh('denied');
    const res = await send('/runs/query', { 'x-api-key': key, 'x-request-id': id });
    expect(res.status).toBe(429);
    expect(res.headers['x-request-id']).toBe(id);
  });
});

describe('request log', () => {
  it('one line per request with requestId, method, path, rule, decision, status, upstream and ms', async () => {
    const id = fresh('logged');
    await send('/runs/query', { 'x-api-key': fresh('key'), 'x-request-id': id });
    const line = await gw.logs.requestLine(id);
    expect(line).toMatchObject({
      msg: 'request',
      requestId: id,
      method: 'POST',
      path: '/runs/query',
      rule: 'runs-query',
      decision: 'allowed',
      status: 200,
      upstream: 'agent-server',
    });
    expect(line.ms).toEqual(expect.any(Number));
    expect(gw.logs.lines().filter((l) => l.requestId === id)).toHaveLength(1);
  });

  it('logs a denial as decision "denied", status 429, no upstream', async () => {
    const key = fresh('key');
    await Promise.all(Array.from({ length: 15 }, () => send('/runs/query', { 'x-api-key': key })));
    const id = fresh('denied');
    await send('/runs/query', { 'x-api-key': key, 'x-request-id': id });
    const line = await gw.logs.requestLine(id);
    expect(line).toMatchObject({ rule: 'runs-query', decision: 'denied', status: 429 });
    expect(line.upstream).toBeUndefined();
  });

  it('never holds the raw api key, user id, authorization or cookie', async () => {
    const key = `lsv2_sk_NEVERLOG_${randomUUID().replaceAll('-', '')}`;
    const user = `user-NEVERLOG-${randomUUID()}`;
    const bearer = `Bearer tok-NEVERLOG-${randomUUID()}`;
    const cookie = `session=NEVERLOG-${randomUUID()}`;
    const ids: string[] = [];
    const headers = { 'x-api-key': key, 'x-user-id': user, authorization: bearer, cookie };
    for (let i = 0; i < 16; i++) {
      const id = fresh('secret');
      ids.push(id);
      await send('/runs/query', { ...headers, 'x-request-id': id });
    }
    // A malformed one too: errors must not leak either.
    const badId = fresh('bad');
    await rawRequest(
      gw.port,
      head('POST /runs/query HTTP/1.1', [
        ['Host', 'edge.test'],
        ['x-api-key', key],
        ['x-api-key', key],
        ['x-user-id', user],
        ['x-request-id', badId],
        ['Content-Length', '0'],
      ]),
    );
    for (const id of [...ids, badId]) await gw.logs.requestLine(id);
    const text = gw.logs.raw();
    for (const secret of [key, user, bearer, cookie, key.slice(-20), user.slice(-20)])
      expect(text).not.toContain(secret);
    expect(
      gw.logs
        .lines()
        .filter((l) => ids.includes(String(l.requestId)))
        .map((l) => l.decision),
    ).toEqual([...Array(15).fill('allowed'), 'denied']);
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
