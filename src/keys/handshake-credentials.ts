import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';

/**
 * Where a WebSocket's credentials come from. Node clients send headers (the SDK's `webSocketFactory`); a browser
 * cannot, so it offers them as the subprotocol, `new WebSocket(url, ["bearer", token])` or `["x-api-key", key]`
 * (the scheme is answered back, never the token), or sends a cookie on the same site: `langgraph_token` (a bearer
 * token) or `langgraph_api_key`. A custom auth handler also sees every cookie in the `cookie` header, as for any
 * request. Headers win over the subprotocol, which wins over cookies.
 */
export const SUBPROTOCOLS = new Set(['bearer', 'x-api-key']);
const TOKEN_COOKIE = 'langgraph_token';
const KEY_COOKIE = 'langgraph_api_key';

/** The handshake's headers, with the credentials of its subprotocol or cookie as the headers that carry them. */
export function handshakeHeaders(req: IncomingMessage): Headers {
  const headers = asHeaders(req.headers);
  const offered = offeredCredential(headers);
  if (offered === null) {
    // Cookies of another site's page are dropped: the handshake goes unauthenticated (cross-site WebSocket hijacking).
    if (!headers.has('authorization') && !headers.has('x-api-key') && !sameSite(headers)) headers.delete('cookie');
    return headers;
  }
  headers.set(offered.header, offered.value);
  return headers;
}

/**
 * The credential a handshake offers in its subprotocol or cookie, as the header that would carry it, or null when it
 * sends `authorization` / `x-api-key` itself (they win) or offers none. The edge counts a socket by the key it finds
 * here as it counts a request by its `x-api-key`.
 */
export function offeredCredential(headers: Headers): { header: 'authorization' | 'x-api-key'; value: string } | null {
  if (headers.has('authorization') || headers.has('x-api-key')) return null;
  const offered = (headers.get('sec-websocket-protocol') ?? '').split(',').map((p) => p.trim());
  for (let i = 0; i + 1 < offered.length; i++) {
    const scheme = offered[i]!.toLowerCase();
    if (!SUBPROTOCOLS.has(scheme)) continue;
    return scheme === 'bearer'
      ? { header: 'authorization', value: `Bearer ${offered[i + 1]}` }
      : { header: 'x-api-key', value: offered[i + 1]! };
  }
  // Cookie credentials only from a page of this site: another site's page could open a socket with the user's
  // cookies (cross-site WebSocket hijacking).
  const cookie = headers.get('cookie');
  if (cookie === null || !sameSite(headers)) return null;
  const cookies = parseCookies(cookie);
  const token = cookies.get(TOKEN_COOKIE);
  const key = cookies.get(KEY_COOKIE);
  if (token) return { header: 'authorization', value: `Bearer ${token}` };
  if (key) return { header: 'x-api-key', value: key };
  return null;
}

/** Node's headers of a request as fetch Headers (a repeated header joined as Node joins it). */
export function asHeaders(incoming: IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined) continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return headers;
}

/** No Origin (not a browser), or an Origin whose host is the one the request was sent to. */
function sameSite(headers: Headers): boolean {
  const origin = headers.get('origin');
  if (origin === null) return true;
  const host = headers.get('x-forwarded-host') ?? headers.get('host');
  try {
    return host !== null && new URL(origin).host === host.split(',')[0]!.trim();
  } catch {
    return false;
  }
}

function parseCookies(header: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const value = part.slice(eq + 1).trim();
    try {
      out.set(part.slice(0, eq).trim(), decodeURIComponent(value));
    } catch {
      out.set(part.slice(0, eq).trim(), value);
    }
  }
  return out;
}
