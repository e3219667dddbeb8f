import { createAdaptorServer } from '@hono/node-server';
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Hono } from 'hono';

export interface Listening {
  readonly server: Server;
  readonly port: number;
  readonly url: string;
  /** Stops accepting, lets open requests finish for up to `graceMs`, then cuts what is left. */
  close(graceMs?: number): Promise<void>;
}

export interface ListenOptions {
  /** Most open connections; further ones are refused at accept. */
  readonly maxConnections?: number;
}

/** Errors Node's HTTP parser answers before any handler runs, as the gateway's JSON errors. */
const PARSER_ERRORS: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'headers_too_large', 'Request headers too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'request_timeout', 'Request not received in time'],
  HPE_INVALID_METHOD: [400, 'bad_request', 'Invalid request method'],
};

/** Serves a Hono app with @hono/node-server and resolves once the port is bound. */
export async function listen(app: Hono<any>, port: number, host = '0.0.0.0', options: ListenOptions = {}): Promise<Listening> {
  const server = createAdaptorServer({ fetch: app.fetch, autoCleanupIncoming: false }) as Server;
  // Slow clients: headers must arrive within 10 s and a whole request within 5 min;
  // idle keep-alive sockets close after 65 s (above common load balancer idle timeouts).
  server.headersTimeout = 10_000;
  server.requestTimeout = 300_000;
  server.keepAliveTimeout = 65_000;
  if (options.maxConnections !== undefined) server.maxConnections = options.maxConnections;
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable || (err.code === 'ECONNRESET' && !socket.readable)) return socket.destroy();
    const [status, code, detail] = PARSER_ERRORS[err.code ?? ''] ?? [400, 'bad_request', 'Malformed request'];
    const body = JSON.stringify({ detail, code });
    socket.end(
      `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request'}\r\n` +
        `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
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
    close: (graceMs = 0) =>
      new Promise<void>((resolve) => {
        const cut = setTimeout(() => server.closeAllConnections(), graceMs);
        server.close(() => {
          clearTimeout(cut);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
