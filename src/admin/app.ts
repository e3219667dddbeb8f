import { Hono } from 'hono';
import { errorResponse, routeNotFound } from '../errors.ts';

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
 */
export function adminApp({ ready, metrics }: { ready: () => Readiness; metrics: MetricsSource }): Hono {
  const app = new Hono();
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', (c) => {
    const r = ready();
    const ok = !r.draining && r.store !== 'down' && (r.workers === undefined || r.workers.ready > 0);
    return c.json({ status: ok ? 'ready' : 'not ready', ...r }, ok ? 200 : 503);
  });
  app.get('/metrics', async (c) => c.body(await metrics.metrics(), 200, { 'content-type': metrics.contentType }));
  app.notFound(() => errorResponse(routeNotFound()));
  return app;
}
