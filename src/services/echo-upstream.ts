import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';

/**
 * The echo upstream: a development stand-in that `npm start` runs until the
 * bundled control plane and Agent Server exist. It answers every request
 * with what it received (method, path, query, forwarded headers, body size),
 * credentials left out; `GET .../stream` answers server-sent events.
 */
const HIDDEN = new Set(['x-api-key', 'authorization', 'cookie']);

export function echoUpstream(name: string): Hono {
  const app = new Hono();
  app.get('*/stream', (c) =>
    streamSSE(c, async (stream) => {
      const count = Math.min(Number(c.req.query('events') ?? 3) || 3, 100);
      for (let i = 1; i <= count; i++) {
        await stream.writeSSE({ event: 'tick', id: String(i), data: JSON.stringify({ upstream: name, n: i }) });
        await stream.sleep(Number(c.req.query('interval_ms') ?? 100));
      }
    }),
  );
  app.all('*', async (c) => {
    const body = c.req.method === 'GET' || c.req.method === 'HEAD' ? new ArrayBuffer(0) : await c.req.arrayBuffer();
    const headers = Object.fromEntries([...c.req.raw.headers].filter(([k]) => !HIDDEN.has(k)));
    const url = new URL(c.req.url);
    return c.json({ upstream: name, method: c.req.method, path: url.pathname, query: url.search, headers, body_bytes: body.byteLength });
  });
  return app;
}
