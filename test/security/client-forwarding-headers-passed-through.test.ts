import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upstreamRequestHeaders } from '../../src/proxy/headers.ts';
import { OPEN_RULES, rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';

/**
 * Finding "client forwarding headers passed through": `X-Real-IP` and `Forwarded` sent by the client reached the
 * upstream unchanged while `X-Forwarded-For` was rewritten. All three are now alike: without TRUST_PROXY the client's
 * values are dropped and the edge's view sent; from a trusted proxy its chains get this hop appended.
 */
let upstream: TestUpstream;
let open: TestGateway;
let trusting: TestGateway;
let rules: ReturnType<typeof rulesDir>;

beforeAll(async () => {
  rules = rulesDir(OPEN_RULES);
  upstream = await startUpstream();
  const env = { RULES_DIR: rules.dir, AGENT_SERVER_URL: upstream.url, CONTROL_PLANE_URL: upstream.url };
  open = await startTestGateway(env);
  trusting = await startTestGateway({ ...env, TRUST_PROXY: '127.0.0.1/32' });
});
afterAll(async () => {
  await Promise.all([open?.close(), trusting?.close()]);
  await upstream?.close();
  rules?.remove();
});

const SPOOFED = {
  'x-real-ip': '6.6.6.6',
  forwarded: 'for=6.6.6.6;proto=https;host=evil.test',
  'x-forwarded-for': '203.0.113.7',
};

/** What the upstream received for one request through `gw`. */
async function throughEdge(gw: TestGateway, headers: Record<string, string>) {
  const id = randomUUID();
  const res = await request(`${gw.url}/anything`, { headers: { ...headers, 'x-request-id': id } });
  await res.body.dump();
  expect(res.statusCode).toBe(200);
  const seen = upstream.seen.filter((r) => r.headers['x-request-id'] === id);
  expect(seen).toHaveLength(1);
  return seen[0]!.headers;
}

describe('X-Real-IP and Forwarded are treated like X-Forwarded-For', () => {
  it("without TRUST_PROXY the client's values are dropped and the edge's view is sent", async () => {
    const h = await throughEdge(open, SPOOFED);
    const host = `127.0.0.1:${open.port}`;
    expect(h['x-forwarded-for']).toBe('127.0.0.1');
    expect(h['x-real-ip']).toBe('127.0.0.1');
    expect(h.forwarded).toBe(`for=127.0.0.1;proto=http;host="${host}"`);
  });

  it('without the headers at all the edge still sends its view', async () => {
    const h = await throughEdge(open, {});
    expect(h['x-real-ip']).toBe('127.0.0.1');
    expect(h.forwarded).toMatch(/^for=127\.0\.0\.1;proto=http;host="127\.0\.0\.1:\d+"$/);
  });

  it("with TRUST_PROXY the trusted proxy's chains get this hop appended, X-Real-IP is the client decided on", async () => {
    const h = await throughEdge(trusting, SPOOFED);
    expect(h['x-forwarded-for']).toBe('203.0.113.7, 127.0.0.1');
    expect(h['x-real-ip']).toBe('203.0.113.7');
    expect(h.forwarded).toBe(
      `for=6.6.6.6;proto=https;host=evil.test, for=127.0.0.1;proto=http;host="127.0.0.1:${trusting.port}"`,
    );
  });

  it('IPv6 nodes are bracketed and quoted, a quote in the host escaped (RFC 7239)', () => {
    const out = upstreamRequestHeaders(
      { host: 'a"b', forwarded: 'for=1.2.3.4', 'x-real-ip': '1.2.3.4' },
      { clientIp: '2001:db8::1', trustedPeer: null, proto: 'https', requestId: 'r' },
    );
    expect(out.forwarded).toBe('for="[2001:db8::1]";proto=https;host="a\\"b"');
    expect(out['x-real-ip']).toBe('2001:db8::1');
    const trusted = upstreamRequestHeaders(
      { host: 'h', forwarded: 'for=1.2.3.4', 'x-forwarded-for': '1.2.3.4' },
      { clientIp: '1.2.3.4', trustedPeer: '::1', proto: 'http', requestId: 'r' },
    );
    expect(trusted.forwarded).toBe('for=1.2.3.4, for="[::1]";proto=http;host="h"');
    expect(trusted['x-forwarded-for']).toBe('1.2.3.4, ::1');
  });
});
