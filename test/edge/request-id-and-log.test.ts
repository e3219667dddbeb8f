import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TestGateway } from '../helpers/gateway.ts';
import { head, rawRequest } from '../helpers/raw-http.ts';
import { fresh, usEdge } from './us-edge.ts';

/**
 * Request ids and the request log through the real edge: the shipped US
 * rules, the memory store, a real upstream that records what reached it
 * (us-edge.ts). Each test uses identities of its own, so the tests share one
 * gateway without sharing buckets.
 */

const edge = usEdge();
const { send, seenWith } = edge;
let gw: TestGateway;
beforeAll(() => void ({ gw } = edge));

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
