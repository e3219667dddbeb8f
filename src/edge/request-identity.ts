import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { noClientAddress, repeatedIdentityHeader } from '../errors.ts';
import { IDENTITIES, IDENTITY_HEADERS, ipIdentity, type IdentitySource } from '../rules/identity.ts';
import { clientIp, unmapIPv4, type TrustedProxies } from './client-ip.ts';
import type { KeyCheck } from './key-check.ts';

/** Who a request is, as the edge reads it off the request: what it is counted by, and what the upstream is told. */
export interface RequestIdentity {
  /** What the limit step counts by: the headers identities are read from, and the client IP as IP identities count it. */
  readonly counted: IdentitySource;
  /** The client's address (X-Forwarded-For believed only through trusted proxies), for the upstream. */
  readonly clientIp: string;
  /** The socket's peer (IPv4-unmapped) when it is a trusted proxy, else null, for the upstream. */
  readonly trustedPeer: string | null;
  /**
   * The first identity header longer than the maximum, or null. Such a request is counted as one without identity
   * headers, then refused.
   */
  readonly overlong: string | null;
}

export interface IdentityOptions {
  readonly trust: TrustedProxies;
  readonly ipv6PrefixBits: number;
  /** KEY_CHECK: an `x-api-key` the registry does not know is counted as if the request carried no key. */
  readonly keyCheck?: KeyCheck | undefined;
  /** MAX_IDENTITY_LENGTH, in bytes. */
  readonly maxIdentityLength: number;
}

/** The header KEY_CHECK looks up: the `api-key` identity's. */
const API_KEY_HEADER = IDENTITIES['api-key'].header;

/**
 * Reads a request's identity: the client IP (client-ip.ts), the identity headers (identity.ts) checked for length
 * and repeats, and the API key checked against the registry (key-check.ts). Throws a 400 GatewayError for a repeated
 * identity header or a connection without a peer address. A promise only when the key needs a registry lookup: the
 * common request reads its identity without a turn of the microtask queue.
 */
export function identityReader({ trust, ipv6PrefixBits, keyCheck, maxIdentityLength }: IdentityOptions) {
  /** `headers`: where the identity headers are read (the request's own, unless a WebSocket's offer adds its key). */
  return function readIdentity(
    req: IncomingMessage,
    headers: IncomingHttpHeaders = req.headers,
  ): RequestIdentity | Promise<RequestIdentity> {
    const overlong = overlongIdentity(req, headers, maxIdentityLength);
    const peer = unmappedPeer(req);
    const ip = clientIp(peer, req.headers['x-forwarded-for'], trust);
    // An over-long identity reaches no cache and no registry: it is refused after being counted.
    const known = overlong !== null || keyCheck === undefined || knownOrNoKey(keyCheck, headers[API_KEY_HEADER]);
    if (known === true || known === false) return identityOf(headers, overlong, peer, ip, !known);
    return known.then((k) => identityOf(headers, overlong, peer, ip, !k));
  };

  // Made once per reader, not a closure per request: the common request allocates only what it returns.
  function identityOf(
    headers: IncomingHttpHeaders,
    overlong: string | null,
    peer: string,
    ip: string,
    unknownKey: boolean,
  ): RequestIdentity {
    return {
      // An unknown key buys no bucket of its own: the request is counted as if it carried no key (it is still
      // forwarded with it: the upstream authenticates, and may know keys the registry does not, custom auth). An
      // over-long identity is counted as a request without identity headers, then refused.
      counted: {
        headers: overlong !== null ? withoutIdentity(headers) : unknownKey ? withoutApiKey(headers) : headers,
        ip: ipIdentity(ip, ipv6PrefixBits),
      },
      clientIp: ip,
      trustedPeer: trust.isTrusted(peer) ? unmapIPv4(peer) : null,
      overlong,
    };
  }
}

function knownOrNoKey(check: KeyCheck, key: string | string[] | undefined): boolean | Promise<boolean> {
  return typeof key !== 'string' || key === '' || check(key);
}

/** The headers the limit step sees for a request whose key the registry does not hold: all but the key. */
function withoutApiKey(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const rest = { ...headers };
  delete rest[API_KEY_HEADER];
  return rest;
}

/** The headers without any identity header: counted as an anonymous request (by client IP). */
function withoutIdentity(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const rest = { ...headers };
  for (const name of IDENTITY_HEADERS) delete rest[name];
  return rest;
}

/**
 * Two headers of one identity (two `x-api-key`, say) are ambiguous: which one counts? Refuse rather than guess.
 * Returns the name of the first identity header longer than `max` bytes (Node reads header values as latin1: one
 * character per byte), or null.
 */
function overlongIdentity(req: IncomingMessage, headers: IncomingHttpHeaders, max: number): string | null {
  let overlong: string | null = null;
  for (const name of IDENTITY_HEADERS) {
    const v = headers[name];
    if (v === undefined) continue;
    if (v.length > max) overlong ??= name;
    if (!v.includes(',')) continue; // Node joins repeats with ", "
    const count = req.rawHeaders.filter((h, i) => i % 2 === 0 && h.toLowerCase() === name).length;
    if (count > 1) throw repeatedIdentityHeader(name);
  }
  return overlong;
}

function unmappedPeer(req: IncomingMessage): string {
  const peer = req.socket.remoteAddress;
  if (!peer) throw noClientAddress();
  return peer;
}
