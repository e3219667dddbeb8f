import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientIp, TRUST_NONE, trustedProxies, unmapIPv4 } from '../../src/edge/client-ip.ts';
import { rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';

describe('trustedProxies', () => {
  it('matches addresses inside the listed CIDRs, IPv4 and IPv6, and plain addresses as /32 or /128', () => {
    const t = trustedProxies(['10.0.0.0/8', '192.168.1.7', '2001:db8:aa::/48', '::1']);
    expect(t.isTrusted('10.255.0.1')).toBe(true);
    expect(t.isTrusted('11.0.0.1')).toBe(false);
    expect(t.isTrusted('192.168.1.7')).toBe(true);
    expect(t.isTrusted('192.168.1.8')).toBe(false);
    expect(t.isTrusted('2001:db8:aa:ffff::1')).toBe(true);
    expect(t.isTrusted('2001:db8:ab::1')).toBe(false);
    expect(t.isTrusted('::1')).toBe(true);
    expect(t.isTrusted('::2')).toBe(false);
  });

  it('trusts an IPv4-mapped peer when its IPv4 address is listed', () => {
    expect(trustedProxies(['127.0.0.1/32']).isTrusted('::ffff:127.0.0.1')).toBe(true);
  });

  it('never trusts garbage, and TRUST_NONE / an empty list trusts nothing', () => {
    const t = trustedProxies(['0.0.0.0/0']);
    expect(t.isTrusted('not-an-ip')).toBe(false);
    expect(t.isTrusted('')).toBe(false);
    expect(TRUST_NONE.isTrusted('127.0.0.1')).toBe(false);
    expect(trustedProxies([]).isTrusted('127.0.0.1')).toBe(false);
  });

  it.each(['bogus', '10.0.0.0/33', '::1/129', '10.0.0.0/x', '10.0.0/8', ''])('throws on %j', (entry) => {
    expect(() => trustedProxies([entry])).toThrow(/not an IP address or CIDR/);
  });
});

describe('clientIp', () => {
  const proxies = trustedProxies(['10.0.0.0/8']);

  it('is the socket peer when the peer is not trusted, whatever X-Forwarded-For says', () => {
    expect(clientIp('203.0.113.9', '1.2.3.4', TRUST_NONE)).toBe('203.0.113.9');
    expect(clientIp('203.0.113.9', '1.2.3.4', proxies)).toBe('203.0.113.9');
    expect(clientIp('203.0.113.9', undefined, proxies)).toBe('203.0.113.9');
  });

  it('unmaps an IPv4-mapped peer', () => {
    expect(clientIp('::ffff:203.0.113.9', undefined, TRUST_NONE)).toBe('203.0.113.9');
    expect(unmapIPv4('::ffff:1.2.3.4')).toBe('1.2.3.4');
    expect(unmapIPv4('::ffff:zzz')).toBe('::ffff:zzz');
    expect(unmapIPv4('2001:db8::1')).toBe('2001:db8::1');
  });

  it('reads X-Forwarded-For right to left behind a trusted peer: the first untrusted hop is the client', () => {
    expect(clientIp('10.0.0.1', '1.1.1.1', proxies)).toBe('1.1.1.1');
    // The client prepended 6.6.6.6 itself; only what the trusted proxies appended is believed.
    expect(clientIp('10.0.0.1', '6.6.6.6, 1.1.1.1, 10.0.0.5, 10.9.9.9', proxies)).toBe('1.1.1.1');
  });

  it('takes the leftmost hop when every hop is a trusted proxy', () => {
    expect(clientIp('10.0.0.1', '10.0.0.7, 10.0.0.5', proxies)).toBe('10.0.0.7');
  });

  it('joins repeated X-Forwarded-For headers in order', () => {
    expect(clientIp('10.0.0.1', ['6.6.6.6', '1.1.1.1, 10.0.0.5'], proxies)).toBe('1.1.1.1');
  });

  it('strips ports from hops (IPv4 host:port and [IPv6]:port) and unmaps IPv4-mapped hops', () => {
    expect(clientIp('10.0.0.1', '2.2.2.2:8080', proxies)).toBe('2.2.2.2');
    expect(clientIp('10.0.0.1', '[2001:db8::1]:443', proxies)).toBe('2001:db8::1');
    expect(clientIp('10.0.0.1', '2001:db8::1', proxies)).toBe('2001:db8::1'); // bare IPv6: colons are not a port
    expect(clientIp('10.0.0.1', '::ffff:3.3.3.3', proxies)).toBe('3.3.3.3');
    expect(clientIp('10.0.0.1', '[::ffff:3.3.3.3]:1', proxies)).toBe('3.3.3.3');
  });

  it('believes nothing left of a garbage hop', () => {
    // Garbage right after the trusted peer: the peer itself is all that is known.
    expect(clientIp('10.0.0.1', '1.1.1.1, garbage', proxies)).toBe('10.0.0.1');
    expect(clientIp('10.0.0.1', '1.1.1.1, [bad', proxies)).toBe('10.0.0.1');
    expect(clientIp('10.0.0.1', '1.1.1.1, ', proxies)).toBe('10.0.0.1');
    expect(clientIp('10.0.0.1', '', proxies)).toBe('10.0.0.1');
    // Garbage behind a trusted hop: the last hop believed is the answer, never 1.1.1.1.
    expect(clientIp('10.0.0.1', '1.1.1.1, unknown, 10.0.0.5', proxies)).toBe('10.0.0.5');
  });
});

/**
 * Through the edge. The one rule counts by IP and refills one token per 36 s,
 * so `r` is an exact count for the length of a test, not a race with refill.
 */
const IP_RULES = `
- id: public
  limits:
    - { by: ip, count: 100, per: 3600s, category: Public (catch-all) }
`;

describe('through the edge', () => {
  let upstream: TestUpstream;
  let rules: ReturnType<typeof rulesDir>;
  const started: TestGateway[] = [];

  beforeAll(async () => {
    rules = rulesDir(IP_RULES);
    upstream = await startUpstream();
  });

  afterAll(async () => {
    rules?.remove();
    await Promise.all(started.map((g) => g.close()));
    await upstream?.close();
  });

  async function gateway(env: Record<string, string> = {}): Promise<TestGateway> {
    const gw = await startTestGateway({
      RULES_DIR: rules.dir,
      AGENT_SERVER_URL: upstream.url,
      CONTROL_PLANE_URL: upstream.url,
      ...env,
    });
    started.push(gw);
    return gw;
  }

  async function get(gw: TestGateway, xff: string | undefined, id: string) {
    const headers: Record<string, string> = { 'x-request-id': id };
    if (xff !== undefined) headers['x-forwarded-for'] = xff;
    const res = await request(`${gw.url}/anything`, { headers });
    await res.body.text();
    const seen = upstream.seen.find((r) => r.headers['x-request-id'] === id);
    return {
      status: res.statusCode,
      ratelimit: res.headers['ratelimit'],
      forwardedFor: seen?.headers['x-forwarded-for'],
    };
  }

  it('without TRUST_PROXY a spoofed X-Forwarded-For changes nothing: one bucket, and the upstream sees the peer only', async () => {
    const gw = await gateway();
    const a = await get(gw, '1.2.3.4', 'spoof-a');
    const b = await get(gw, '5.6.7.8', 'spoof-b');
    const c = await get(gw, '9.9.9.9, 1.2.3.4', 'spoof-c');
    const d = await get(gw, undefined, 'spoof-d');
    expect([a, b, c, d].map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect([a, b, c, d].map((r) => r.ratelimit)).toEqual([
      '"public.ip";r=99;t=36',
      '"public.ip";r=98;t=36',
      '"public.ip";r=97;t=36',
      '"public.ip";r=96;t=36',
    ]);
    expect([a, b, c, d].map((r) => r.forwardedFor)).toEqual(['127.0.0.1', '127.0.0.1', '127.0.0.1', '127.0.0.1']);
  });

  it('with TRUST_PROXY=127.0.0.1/32 the X-Forwarded-For client is counted, and the upstream gets the chain with the peer appended', async () => {
    const gw = await gateway({ TRUST_PROXY: '127.0.0.1/32' });
    const a = await get(gw, '1.2.3.4', 'trust-a');
    const b = await get(gw, '5.6.7.8', 'trust-b');
    const a2 = await get(gw, '1.2.3.4', 'trust-a2');
    // A client-prepended hop is not believed: the rightmost untrusted hop (1.2.3.4) is the client.
    const a3 = await get(gw, '6.6.6.6, 1.2.3.4', 'trust-a3');
    const peer = await get(gw, undefined, 'trust-peer');
    expect([a, b, a2, a3, peer].map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect([a, b, a2, a3, peer].map((r) => r.ratelimit)).toEqual([
      '"public.ip";r=99;t=36',
      '"public.ip";r=99;t=36',
      '"public.ip";r=98;t=36',
      '"public.ip";r=97;t=36',
      '"public.ip";r=99;t=36',
    ]);
    expect([a, b, a2, a3, peer].map((r) => r.forwardedFor)).toEqual([
      '1.2.3.4, 127.0.0.1',
      '5.6.7.8, 127.0.0.1',
      '1.2.3.4, 127.0.0.1',
      '6.6.6.6, 1.2.3.4, 127.0.0.1',
      '127.0.0.1',
    ]);
  });

  it('with a trusted proxy, IPv6 clients of one /64 share a bucket and the next /64 has its own', async () => {
    const gw = await gateway({ TRUST_PROXY: '127.0.0.1' });
    const one = await get(gw, '2001:db8:0:1::1', 'v6-one');
    const sameNet = await get(gw, '2001:db8:0:1:ffff:ffff:ffff:ffff', 'v6-same');
    const otherNet = await get(gw, '[2001:db8:0:2::1]:443', 'v6-other');
    expect([one, sameNet, otherNet].map((r) => r.ratelimit)).toEqual([
      '"public.ip";r=99;t=36',
      '"public.ip";r=98;t=36',
      '"public.ip";r=99;t=36',
    ]);
  });

  it('with a trusted proxy, a garbage X-Forwarded-For counts the proxy itself, not a fresh identity per value', async () => {
    const gw = await gateway({ TRUST_PROXY: '127.0.0.1/32' });
    const a = await get(gw, 'garbage-1', 'garbage-a');
    const b = await get(gw, 'garbage-2', 'garbage-b');
    const peer = await get(gw, undefined, 'garbage-peer');
    expect([a, b, peer].map((r) => r.ratelimit)).toEqual([
      '"public.ip";r=99;t=36',
      '"public.ip";r=98;t=36',
      '"public.ip";r=97;t=36',
    ]);
  });
});
