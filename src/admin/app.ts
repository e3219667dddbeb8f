import { Hono } from 'hono';
import { routeNotFound } from '../errors.ts';
import type { Metrics } from '../metrics.ts';

export interface Readiness {
  /** Version of the rule file in force. */
  readonly rules: string;
  readonly store: 'ok' | 'failing-open' | 'down';
  readonly draining: boolean;
}

/**
 * The admin listener (ADMIN_PORT): health, readiness and metrics for
 * orchestrators and Prometheus; never rate limited, never on the public port.
 */
export function adminApp({ ready, metrics }: { ready: () => Readiness; metrics: Metrics }): Hono {
  const app = new Hono();
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', (c) => {
    const r = ready();
    const ok = !r.draining && r.store !== 'down';
    return c.json({ status: ok ? 'ready' : 'not ready', ...r }, ok ? 200 : 503);
  });
  app.get('/metrics', async (c) =>
    c.body(await metrics.registry.metrics(), 200, { 'content-type': metrics.registry.contentType }),
  );
  app.notFound((c) => c.json(routeNotFound().toJSON(), 404));
  return app;
}
