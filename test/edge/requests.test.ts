import { beforeAll, describe, expect, it } from 'vitest';
import type { TestGateway } from '../helpers/gateway.ts';
import { head, rawRequest } from '../helpers/raw-http.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { fresh, usEdge } from './us-edge.ts';

/**
 * Request paths and malformed requests through the real edge: the shipped US
 * rules, the memory store, a real upstream that records what reached it
 * (us-edge.ts). Each test uses identities of its own, so the tests share one
 * gateway without sharing buckets.
 */

const edge = usEdge();
const { send, seenWith } = edge;
let gw: TestGateway, upstream: TestUpstream;
beforeAll(() => void ({ gw, upstream } = edge));

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
      // The shipped per-IP guard is the second item.
      expect(res.headers['ratelimit-policy']).toEqual(['"runs-query.api-key";q=15;w=10, "guard.per-ip";q=20000;w=10']);
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
    ['no Host header', 'GET /runs/query HTTP/1.1\r\nConnection: close\r\n\r\n', 400],
    ['an invalid Host header', 'GET /runs/query HTTP/1.1\r\nHost: edge test/x\r\nConnection: close\r\n\r\n', 400],
    ['a backslash in the path', 'GET /runs\\query HTTP/1.1\r\nHost: edge.test\r\nConnection: close\r\n\r\n', 400],
  ] as const) {
    it(`${what} → ${status}`, async () => {
      const res = await rawRequest(gw.port, raw);
      expect(res.status).toBe(status);
      if (status === 400) expect(res.json()).toEqual({ detail: expect.any(String), code: expect.any(String) });
      const after = await send('/runs/query', { 'x-api-key': fresh('key') });
      expect(after.status).toBe(200);
    });
  }
});
