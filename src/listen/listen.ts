import { getRequestListener, RequestError } from '@hono/node-server';
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Hono } from 'hono';
import {
  badRequest,
  errorResponse,
  type GatewayError,
  headersTooLarge,
  internalError,
  rawErrorResponse,
  requestTimeout,
  tooManyConnections,
} from '../errors.ts';
import { capConnections } from './connection-caps.ts';
import { closeAfterUnreadBody, readBodyFirst } from './unread-body.ts';

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
  /**
   * The app answers `Expect: 100-continue` itself, calling `writeContinue()` once it wants the body
   * (the edge: only after the request is allowed). Otherwise Node sends `100 Continue` at once.
   */
  readonly deferContinue?: boolean;
  /**
   * Request bodies flow to the app as they arrive (the edge: it streams them upstream), and a response that starts
   * before its body has arrived closes the connection. Otherwise (the services) every body is read whole, up to
   * MAX_BUFFERED_BODY_BYTES, before the app runs (unread-body.ts).
   */
  readonly streamBodies?: boolean;
  /**
   * WebSocket upgrades (`Upgrade: websocket`): the request and its socket, which no HTTP parser reads any more. Any
   * other upgrade (`h2c`, say) is served as the ordinary request it also is, without its Upgrade header. Without this,
   * every upgrade is an ordinary request.
   */
  readonly upgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /**
   * Most connections one client address holds open (`addressOf`: the address as IP limits count it, null for a peer
   * exempt from the cap); with maxConnections, idle keep-alive is also cut short near it (connection-caps.ts).
   */
  readonly perAddress?: { readonly max: number; readonly addressOf: (socket: Socket) => string | null };
}

/**
 * Largest body a service listener reads before its app runs: just above the services' own JSON body limits (10 MiB
 * for the Agent Server, 1 MiB for the control plane), so a body no app would take is refused before it is all held.
 */
const MAX_BUFFERED_BODY_BYTES = 16 * 1024 * 1024;

/** Errors Node's HTTP parser answers before any handler runs, as the gateway's JSON errors. */
const PARSER_ERRORS: Record<string, () => GatewayError> = {
  HPE_HEADER_OVERFLOW: headersTooLarge,
  ERR_HTTP_REQUEST_TIMEOUT: requestTimeout,
  HPE_INVALID_METHOD: () => badRequest('Invalid request method'),
};

/** How often Node checks open connections against headersTimeout / requestTimeout, ms. */
const CONNECTION_SWEEP_MS = 1000;

/** While closing, how often connections that went idle (their last request done) are closed, ms. */
const IDLE_SWEEP_MS = 50;

/**
 * Requests @hono/node-server cannot turn into a Web Request (a backslash in the path, a target
 * that is neither a path nor an absolute URL, an invalid Host) get the gateway's JSON 400 rather
 * than the adapter's empty one; anything else it catches, a JSON 500.
 */
function adapterError(err: unknown): Response {
  return errorResponse(err instanceof RequestError ? badRequest(`Malformed request: ${err.message}`) : internalError());
}

/**
 * Pipelined requests (sent behind one whose response is still being written) are handled one at a time, in order:
 * Node hands such a request's response the socket (its `socket` event) only once the response before it has finished
 * on a connection that stays open. After a response that closes the connection (a 400, a final answer to
 * `Expect: 100-continue` without `100 Continue`, `Connection: close`) it never does, so nothing pipelined behind a
 * closing response ever reaches the app, let alone an upstream. A request that is not pipelined (the response has its
 * socket at once) costs one property read.
 */
function inOrder(handle: RequestListener): RequestListener {
  return (req, res) => {
    const socket = res.socket;
    if (socket === null) res.once('socket', () => handle(req, res));
    else if (!socket.writableEnded) handle(req, res);
  };
}

/**
 * What a listener serves: a Hono app (the services, the admin listener), through @hono/node-server; or a handler on
 * Node's own request and response (the edge: the Web Request/Response layer costs a proxy more than its own work, and
 * the edge needs none of it). A handler answers every request itself and never rejects.
 */
export type Served = Hono<any> | ((req: IncomingMessage, res: ServerResponse) => Promise<void>);

/**
 * Serves `app` and resolves once the port is bound. `host` null: every interface, IPv6 and IPv4 (`::` dual-stack), or
 * `0.0.0.0` where the host has no IPv6 (Node's choice for an omitted host).
 */
export async function listen(
  app: Served,
  /** A TCP port, or a listening socket the process was handed (a revision's, made by its host). */
  port: number | { readonly fd: number },
  host: string | null = '0.0.0.0',
  options: ListenOptions = {},
): Promise<Listening> {
  const handle =
    typeof app === 'function'
      ? app
      : getRequestListener(app.fetch, { autoCleanupIncoming: false, errorHandler: adapterError });
  // Neither rejects (a handler answers every request itself; hono's listener answers through adapterError).
  const adapter: RequestListener = (req, res) => void handle(req, res);
  // Node enforces headersTimeout and requestTimeout only when it sweeps its connections, every
  // connectionsCheckingInterval (default 30 s): a slow-loris then held a socket for up to 40 s, not 10.
  const served = inOrder(
    options.streamBodies ? closeAfterUnreadBody(adapter) : readBodyFirst(MAX_BUFFERED_BODY_BYTES, adapter),
  );
  /**
   * With upgrades: each connection's latest response. Responses leave in order, so once it has ended every response
   * before it has too (one map write per request, no listener).
   */
  const latest = new WeakMap<Duplex, ServerResponse>();
  const counted: RequestListener = (req, res) => {
    latest.set(req.socket, res);
    served(req, res);
  };
  const server = createServer(
    // requireHostHeader: Node's own answer to a missing Host is an empty 400; the adapter (or the edge's handler)
    // refuses it as JSON instead.
    { connectionsCheckingInterval: CONNECTION_SWEEP_MS, requireHostHeader: false },
    options.upgrade === undefined ? served : counted,
  );
  // Slow clients: headers must arrive within 10 s and a whole request within 5 min;
  // idle keep-alive sockets close after 65 s (above common load balancer idle timeouts).
  server.headersTimeout = 10_000;
  server.requestTimeout = 300_000;
  server.keepAliveTimeout = 65_000;
  if (options.maxConnections !== undefined) server.maxConnections = options.maxConnections;
  if (options.perAddress !== undefined)
    capConnections(server, {
      maxPerAddress: options.perAddress.max,
      addressOf: options.perAddress.addressOf,
      maxConnections: options.maxConnections ?? Infinity,
      keepAliveMs: server.keepAliveTimeout,
      refusal: rawErrorResponse(tooManyConnections(options.perAddress.max)),
    });
  // A final answer without 100 Continue makes Node close the connection after it (the body may or may not follow).
  if (options.deferContinue) server.on('checkContinue', (req, res) => server.emit('request', req, res));
  const upgrade = options.upgrade;
  if (upgrade !== undefined)
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (!isWebSocketUpgrade(req)) return serveAsRequest(server, req, socket, head);
      // Pipelined behind a response still being written: the socket is the upgrade's only once that has left.
      const res = latest.get(socket);
      if (res === undefined || res.writableFinished || res.destroyed) upgrade(req, socket, head);
      else res.once('close', () => upgrade(req, socket, head));
    });
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable || (err.code === 'ECONNRESET' && !socket.readable)) return socket.destroy();
    socket.end(rawErrorResponse(PARSER_ERRORS[err.code ?? '']?.() ?? badRequest('Malformed request')));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if (typeof port === 'object' || host === null) server.listen(port, () => resolve());
    else server.listen(port, host, () => resolve());
  });
  const bound = server.address();
  const { port: tcpPort, address } = typeof bound === 'object' && bound !== null ? bound : { port: 0, address: '' };
  const shown =
    address === '0.0.0.0' || address === '::' ? '127.0.0.1' : address.includes(':') ? `[${address}]` : address;
  return {
    server,
    port: tcpPort,
    url: address === '' ? '' : `http://${shown}:${tcpPort}`,
    close: (graceMs = 0) =>
      new Promise<void>((resolve) => {
        const cut = setTimeout(() => server.closeAllConnections(), graceMs);
        // server.close() closes the connections idle right now; a keep-alive connection whose request
        // ends later goes idle and would hold the close until the cut: close those as they go idle.
        const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
        server.close(() => {
          clearTimeout(cut);
          clearInterval(sweep);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}

/** `Upgrade: websocket` (RFC 6455 §4.2.1: the token, case-insensitive, possibly among others). */
function isWebSocketUpgrade(req: IncomingMessage): boolean {
  const upgrade = req.headers.upgrade;
  return upgrade !== undefined && upgrade.split(',').some((t) => t.trim().toLowerCase() === 'websocket');
}

/**
 * An upgrade the listener does not take (RFC 9110 §7.8: a server may ignore Upgrade) is parsed again as an ordinary
 * request: its head, rebuilt without the Upgrade header, and the bytes after it go back on the socket, and the server
 * reads the connection anew.
 */
function serveAsRequest(server: Server, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  let text = `${req.method} ${req.url} HTTP/${req.httpVersion}\r\n`;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2)
    if (raw[i]!.toLowerCase() !== 'upgrade') text += `${raw[i]}: ${raw[i + 1]}\r\n`;
  socket.unshift(Buffer.concat([Buffer.from(`${text}\r\n`, 'latin1'), head]));
  server.emit('connection', socket);
}
