import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Hono, type MiddlewareHandler } from 'hono';
import { INTERNAL_HEADER } from '../proxy/headers.ts';

/**
 * The bundled control plane and Agent Server listen on loopback, where a deployment's own process can reach them too,
 * past the edge's limits and key checks. They answer only requests carrying INTERNAL_HEADER with this boot's secret,
 * which only the edge has: it adds the header to the upstreams of the bundled services (gateway.ts) and drops any a client
 * sent (proxy/headers.ts); it never sends it to a deployment's process.
 *
 * The secret is random per boot. Edge workers (node:cluster) inherit it, with the services' origins, through the
 * environment the primary forks them with (SECRET_VARIABLE, ORIGINS_VARIABLE); a revision's process gets none of the
 * gateway's variables (revision-host).
 */
const SECRET_VARIABLE = 'GATEWAY_INTERNAL_SECRET';
const ORIGINS_VARIABLE = 'GATEWAY_INTERNAL_ORIGINS';

/** This boot's secret: made by the first process that needs it, inherited by the workers it forks afterwards. */
export function internalSecret(env: NodeJS.ProcessEnv = process.env): string {
  return (env[SECRET_VARIABLE] ||= randomBytes(32).toString('base64url'));
}

/** A bundled service now listens at `url`: the edge (here and in workers forked after) authenticates to it. */
export function markInternal(url: string, env: NodeJS.ProcessEnv = process.env): void {
  const origins = new Set((env[ORIGINS_VARIABLE] ?? '').split(' ').filter(Boolean));
  origins.add(new URL(url).origin);
  env[ORIGINS_VARIABLE] = [...origins].join(' ');
}

/** The header the edge adds for an upstream at `url`: the secret for a bundled service, nothing for anything else. */
export function internalHeaders(url: string, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const origins = (env[ORIGINS_VARIABLE] ?? '').split(' ');
  const secret = env[SECRET_VARIABLE];
  return secret && origins.includes(new URL(url).origin) ? { [INTERNAL_HEADER]: secret } : {};
}

/**
 * 403 `{detail}` for a request without this boot's secret. A request with it has the header taken off before anything
 * else reads the request: the Agent Server copies every `x-*` header into a run's `config.configurable` (which the
 * thread's state and history keep), and hands the request to the app's auth handler and routes, all tenant-visible.
 */
export function internalOnly(secret: string): MiddlewareHandler {
  const expected = Buffer.from(secret);
  return async function internalOnly(c, next) {
    const given = Buffer.from(c.req.header(INTERNAL_HEADER) ?? '');
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      return c.json({ detail: 'Forbidden: this service answers the gateway edge only' }, 403);
    withoutSecret(c.req.raw, c.env as { incoming?: IncomingMessage } | undefined);
    await next();
  };
}

/** The request (and, under @hono/node-server, the Node request it was made from) without INTERNAL_HEADER. */
function withoutSecret(request: Request, env: { incoming?: IncomingMessage } | undefined): void {
  request.headers.delete(INTERNAL_HEADER);
  const incoming = env?.incoming;
  if (incoming === undefined) return;
  delete incoming.headers[INTERNAL_HEADER];
  const raw = incoming.rawHeaders;
  for (let i = raw.length - 2; i >= 0; i -= 2) if (raw[i]!.toLowerCase() === INTERNAL_HEADER) raw.splice(i, 2);
}

/** `app` behind internalOnly, as one app to listen with. */
export function guarded(app: { fetch: Hono['fetch'] }, secret: string): Hono {
  const outer = new Hono();
  outer.use(internalOnly(secret));
  outer.all('*', (c) => app.fetch(c.req.raw, c.env));
  return outer;
}
