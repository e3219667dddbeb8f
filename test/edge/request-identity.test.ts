import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { TRUST_NONE, trustedProxies } from '../../src/edge/client-ip.ts';
import { identityReader, type RequestIdentity } from '../../src/edge/request-identity.ts';

/** A request as the reader sees it: headers (lower-case, repeats joined as Node joins them), raw headers, peer. */
function fakeRequest(raw: [string, string][], peer: string | null = '::ffff:10.1.2.3'): IncomingMessage {
  const headers: Record<string, string> = {};
  for (const [name, value] of raw) {
    const n = name.toLowerCase();
    headers[n] = headers[n] === undefined ? value : `${headers[n]}, ${value}`;
  }
  return {
    headers,
    rawHeaders: raw.flat(),
    socket: { remoteAddress: peer ?? undefined },
  } as unknown as IncomingMessage;
}

const options = { trust: TRUST_NONE, ipv6PrefixBits: 64, maxIdentityLength: 16 };

describe('identityReader', () => {
  it('counts by the headers as sent and the unmapped peer, synchronously without a key check', () => {
    const id = identityReader(options)(fakeRequest([['X-Api-Key', 'k1']])) as RequestIdentity;
    expect(id.counted.headers['x-api-key']).toBe('k1');
    expect(id).toMatchObject({ clientIp: '10.1.2.3', trustedPeer: null, overlong: null, counted: { ip: '10.1.2.3' } });
  });

  it('reads X-Forwarded-For through a trusted peer, and names that peer for the upstream', () => {
    const read = identityReader({ ...options, trust: trustedProxies(['10.0.0.0/8']) });
    const id = read(fakeRequest([['X-Forwarded-For', '203.0.113.9']])) as RequestIdentity;
    expect(id).toMatchObject({ clientIp: '203.0.113.9', trustedPeer: '10.1.2.3', counted: { ip: '203.0.113.9' } });
  });

  it('counts an unknown key as no key; a known one as itself (a promise only on a registry lookup)', async () => {
    const read = identityReader({ ...options, keyCheck: (key) => Promise.resolve(key === 'good') });
    const unknown = read(fakeRequest([['x-api-key', 'bad']]));
    expect(unknown).toBeInstanceOf(Promise);
    expect((await unknown).counted.headers['x-api-key']).toBeUndefined();
    expect((await read(fakeRequest([['x-api-key', 'good']]))).counted.headers['x-api-key']).toBe('good');
    expect(read(fakeRequest([]))).not.toBeInstanceOf(Promise);
  });

  it('counts a request with an over-long identity header without its identity headers, and names the header', () => {
    const id = identityReader(options)(
      fakeRequest([
        ['x-user-id', 'u'.repeat(17)],
        ['x-api-key', 'k'],
      ]),
    ) as RequestIdentity;
    expect(id.overlong).toBe('x-user-id');
    expect(id.counted.headers['x-user-id']).toBeUndefined();
    expect(id.counted.headers['x-api-key']).toBeUndefined();
  });

  it('refuses a repeated identity header, and a connection without a peer address', () => {
    const read = identityReader(options);
    expect(() =>
      read(
        fakeRequest([
          ['x-api-key', 'a'],
          ['X-Api-Key', 'b'],
        ]),
      ),
    ).toThrow(/Repeated x-api-key header/);
    expect(() => read(fakeRequest([], null))).toThrow(/Client address unknown/);
  });
});
