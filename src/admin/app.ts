import { timingSafeEqual } from 'node:crypto';
import { Hono } from 'hono';
import { errorResponse, routeNotFound } from '../errors.ts';
import type { KeyRegistry } from '../keys/types.ts';
import { keysAdmin } from './keys.ts';
import { limitsAdmin, type LimitsAdminOptions } from './limits.ts';
import { overridesAdmin, type OverridesAdminOptions } from './overrides.ts';
import { throttleTokenGuesses } from './token-guesses.ts';

export interface Readiness {
  /** Version of the rule file in force. */
  readonly rules: string;
  readonly store: 'ok' | 'failing-open' | 'down';
  readonly draining: boolean;
  /** With WORKERS > 1: how many edge workers were asked for, and how many serve. */
  readonly workers?: { readonly expected: number; readonly ready: number };
}

/** Prometheus text and its content type: a prom-client Registry, or the workers' aggregate. */
export interface MetricsSource {
  metrics(): Promise<string>;
  readonly contentType: string;
}

/**
 * The admin listener (ADMIN_PORT): health, readiness and metrics for
 * orchestrators and Prometheus; never rate limited, never on the public port.
 *
 * Only /keys and /limits mutate (API keys, plans and buckets, with the operator token only). /healthz and /readyz stay open: probes carry no credentials, and they tell only whether the
 * gateway serves. /metrics counts every tenant's traffic (requests, limits, upstream latencies, deployments routed),
 * which one tenant's code on the same loopback must not read: with `token` (an operator's secret) it answers only
 * `authorization: Bearer <token>`, else 401.
 */
export function adminApp({
  ready,
  metrics,
  token = null,
  keys = null,
  overrides,
  buckets,
}: {
  ready: () => Readiness;
  metrics: MetricsSource;
  token?: string | null;
  /** The key registry of this gateway's services, managed under /keys (keys.ts); null: none here. */
  keys?: KeyRegistry | null;
  /** Plans per organisation, under /limits/overrides (overrides.ts): written to the store every edge polls. */
  overrides?: Omit<OverridesAdminOptions, 'token'>;
  /** The edge's buckets (this process's, or with WORKERS > 1 the workers' in Redis), read and reset under /limits (limits.ts). */
  buckets?: Omit<LimitsAdminOptions, 'token'>;
}): Hono {
  const app = new Hono();
  // Before every token check: an address that keeps sending wrong tokens is answered 429 (token-guesses.ts).
  app.use('*', throttleTokenGuesses());
  app.route('/keys', keysAdmin({ registry: keys, token }));
  if (overrides !== undefined) app.route('/limits/overrides', overridesAdmin({ ...overrides, token }));
  if (buckets !== undefined) app.route('/limits', limitsAdmin({ ...buckets, token }));
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  if (token !== null) {
    const expected = Buffer.from(`Bearer ${token}`);
    app.use('/metrics', async function operatorOnly(c, next) {
      const given = Buffer.from(c.req.header('authorization') ?? '');
      if (given.length !== expected.length || !timingSafeEqual(given, expected))
        return c.json({ detail: 'Unauthorized: /metrics needs the operator token' }, 401);
      await next();
    });
  }
  app.get('/readyz', (c) => {
    const r = ready();
    const ok = !r.draining && r.store !== 'down' && (r.workers === undefined || r.workers.ready > 0);
    return c.json({ status: ok ? 'ready' : 'not ready', ...r }, ok ? 200 : 503);
  });
  app.get('/metrics', async (c) => c.body(await metrics.metrics(), 200, { 'content-type': metrics.contentType }));
  app.notFound(() => errorResponse(routeNotFound()));
  return app;
}
