import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/** The edge's proof to the bundled services that it sent a request (services/internal-auth.ts): never a client's. */
export const INTERNAL_HEADER = 'x-gateway-internal';

/**
 * Header hygiene between client and upstream (RFC 9110 §7.6.1): hop-by-hop
 * headers, and any header the `Connection` header names, describe one
 * connection and never cross the proxy. `host` is the upstream's (undici sets
 * it); the client's arrives as `x-forwarded-host`.
 */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'expect', // the edge answers a 100-continue expectation itself (forward.ts); undici refuses the header
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function connectionTokens(value: string | string[] | undefined): Set<string> | null {
  if (value === undefined || value === 'keep-alive' || value === 'close') return null; // nearly always
  const tokens = (Array.isArray(value) ? value.join(',') : value).split(',').map((t) => t.trim().toLowerCase());
  return new Set(tokens.filter((t) => t !== '' && t !== 'close' && t !== 'keep-alive'));
}

/** What the edge tells the upstream about the client, as `x-forwarded-*`, `x-real-ip` and `forwarded` (RFC 7239). */
export interface Forwarded {
  /** The client address the edge decided on (the peer, or with TRUST_PROXY the first untrusted hop), IPv4 unmapped. */
  readonly clientIp: string;
  /**
   * The socket peer (IPv4 unmapped) when it is a trusted proxy: the chains it sent (`x-forwarded-for`, `forwarded`)
   * are kept with this hop appended. Null otherwise: the client's values are dropped and the edge's view sent.
   */
  readonly trustedPeer: string | null;
  readonly proto: string;
  readonly requestId: string;
}

/**
 * The client's `x-forwarded-*`, `x-real-ip` and `forwarded` never pass as sent: without a trusted peer they are
 * replaced by the edge's view (`x-forwarded-for: <client>`, `x-real-ip: <client>`,
 * `forwarded: for=<client>;proto=<proto>;host="<host>"`); from a trusted proxy its `x-forwarded-for` and `forwarded`
 * chains get this hop appended, and `x-real-ip` is the client the edge decided on.
 */
export function upstreamRequestHeaders(
  incoming: IncomingHttpHeaders,
  fwd: Forwarded,
): Record<string, string | string[]> {
  const named = connectionTokens(incoming.connection);
  const out: Record<string, string | string[]> = {};
  for (const name in incoming) {
    if (
      HOP_BY_HOP.has(name) ||
      name === 'host' ||
      name.startsWith('x-forwarded-') ||
      name === 'forwarded' ||
      name === 'x-real-ip' ||
      name === INTERNAL_HEADER || // the edge's proof to its bundled services: never a client's to send
      (named !== null && named.has(name))
    )
      continue;
    const v = incoming[name];
    if (v !== undefined) out[name] = v;
  }
  const { trustedPeer, clientIp, proto } = fwd;
  const host = incoming.host;
  const chain = trustedPeer === null ? undefined : incoming['x-forwarded-for'];
  out['x-forwarded-for'] = chain ? `${chain}, ${trustedPeer}` : clientIp;
  out['x-real-ip'] = clientIp;
  const hop = `for=${forwardedNode(trustedPeer ?? clientIp)};proto=${proto}${host ? `;host=${quoted(host)}` : ''}`;
  const before = trustedPeer === null ? undefined : incoming.forwarded;
  out.forwarded = before ? `${before}, ${hop}` : hop;
  out['x-forwarded-proto'] = proto;
  if (host !== undefined) out['x-forwarded-host'] = host;
  out['x-request-id'] = fwd.requestId;
  return out;
}

/** RFC 7239 §6: an IPv6 node is bracketed and, as it holds ":", quoted. */
function forwardedNode(ip: string): string {
  return ip.includes(':') ? `"[${ip}]"` : ip;
}

/** A quoted-string (RFC 9110 §5.6.4): `"` and `\` escaped. */
function quoted(value: string): string {
  return value.includes('"') || value.includes('\\') ? `"${value.replace(/["\\]/g, '\\$&')}"` : `"${value}"`;
}

/** Upstream response headers as undici gives them, minus hop-by-hop ones. */
export function clientResponseHeaders(upstream: Record<string, string | string[] | undefined>): OutgoingHttpHeaders {
  const named = connectionTokens(upstream.connection);
  const out: OutgoingHttpHeaders = {};
  for (const name in upstream) {
    if (HOP_BY_HOP.has(name) || (named !== null && named.has(name))) continue;
    const v = upstream[name];
    if (v !== undefined) out[name] = v;
  }
  return out;
}
