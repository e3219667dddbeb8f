import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/**
 * Header hygiene between client and upstream (RFC 9110 §7.6.1): hop-by-hop
 * headers, and any header the `Connection` header names, describe one
 * connection and never cross the proxy. `host` is the upstream's (undici sets
 * it); the client's arrives as `x-forwarded-host`.
 */
const HOP_BY_HOP = new Set([
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

export interface Forwarded {
  /** The value to send as `x-forwarded-for`. */
  readonly forwardedFor: string;
  readonly proto: string;
  readonly requestId: string;
}

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
      (named !== null && named.has(name))
    )
      continue;
    const v = incoming[name];
    if (v !== undefined) out[name] = v;
  }
  out['x-forwarded-for'] = fwd.forwardedFor;
  out['x-forwarded-proto'] = fwd.proto;
  if (incoming.host !== undefined) out['x-forwarded-host'] = incoming.host;
  out['x-request-id'] = fwd.requestId;
  return out;
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
