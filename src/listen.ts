import { createAdaptorServer } from '@hono/node-server';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Hono } from 'hono';

export interface Listening {
  readonly server: Server;
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

/** Serves a Hono app with @hono/node-server and resolves once the port is bound. */
export async function listen(app: Hono<any>, port: number, host = '0.0.0.0'): Promise<Listening> {
  const server = createAdaptorServer({ fetch: app.fetch, autoCleanupIncoming: false }) as Server;
  // Slow clients: headers must arrive within 10 s; idle keep-alive sockets close after 65 s (above common LB idle timeouts).
  server.headersTimeout = 10_000;
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return {
    server,
    port: bound,
    url: `http://${shown}:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
