import { Hono } from 'hono';

/**
 * The admin listener (ADMIN_PORT): health for orchestrators, never rate
 * limited and never on the public port.
 */
export function adminApp({ ready }: { ready: () => boolean }): Hono {
  const app = new Hono();
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', (c) => (ready() ? c.json({ status: 'ready' }) : c.json({ status: 'not ready' }, 503)));
  app.notFound((c) => c.json({ detail: 'Not found', code: 'not_found' }, 404));
  return app;
}
