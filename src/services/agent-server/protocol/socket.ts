import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Logger } from 'pino';
import type { ServerContext } from '../context.ts';
import { handshakeHeaders, SUBPROTOCOLS } from '../../../keys/handshake-credentials.ts';
import { handshakes } from './handshakes.ts';
import { SocketSession } from './socket-session.ts';
import type { ProtocolThreads } from './threads.ts';

/** The one path a WebSocket opens on: the protocol's event stream of a thread. */
const SOCKET_PATH = /^\/threads\/([^/?#]+)\/stream\/events(?:\?.*)?$/;
/** Largest command a socket takes (a run's input), as the body limit of a request would. */
const MAX_MESSAGE_BYTES = 10 * 1024 * 1024;

/** Something that answers a Request: the Agent Server's app, or the app behind the bundled services' guard. */
export interface FetchApp {
  fetch(request: Request): Response | Promise<Response>;
}

/**
 * The protocol's WebSockets (`ws`, no server of its own): `attach` listens to a node HTTP server's `upgrade` for
 * `/threads/{thread_id}/stream/events` only (any other upgrade is answered 404 and closed). The handshake goes
 * through the app as a GET of that path, so it meets every middleware, the authentication (credentials from the
 * headers, a cookie, or the subprotocol: handshake-credentials.ts) and the thread's authorization; a refusal still
 * completes the handshake, then closes with 4000 + its status and its detail as the reason, which the SDK reads
 * (4401, 4403, 4404, 4422; a server error closes 1011).
 */
export class ProtocolSockets {
  private readonly wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_MESSAGE_BYTES,
    // Answer the credential scheme the client offered (the token itself is never echoed).
    handleProtocols: (offered) => [...offered].find((p) => SUBPROTOCOLS.has(p.toLowerCase())) ?? false,
  });
  private readonly sessions = new Set<SocketSession>();

  constructor(
    private readonly ctx: ServerContext,
    private readonly threads: ProtocolThreads,
    private readonly app: FetchApp,
    private readonly log: Logger,
  ) {}

  /** Serves the protocol's WebSockets on `server`, each handshake answered by `app` (default: the Agent Server's). */
  attach(server: Server, app: FetchApp = this.app): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      void this.upgrade(req, socket, head, app).catch((err: unknown) => {
        this.log.warn({ err: { message: (err as Error)?.message } }, 'protocol websocket handshake failed');
        socket.destroy();
      });
    });
  }

  /** Closes every socket (1001, going away). */
  close(): void {
    for (const s of this.sessions) s.close(1001, 'server shutting down');
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, app: FetchApp): Promise<void> {
    socket.on('error', () => socket.destroy());
    const match = SOCKET_PATH.exec(req.url ?? '');
    if (match === null || req.headers.upgrade?.toLowerCase() !== 'websocket') {
      socket.end(
        'HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{"detail":"Not Found"}',
      );
      return;
    }
    const threadId = decodeURIComponent(match[1]!);
    const headers = handshakeHeaders(req);
    const request = new Request(`http://${req.headers.host ?? 'localhost'}${req.url}`, { method: 'GET', headers });
    const pending: { auth?: import('../auth/authenticate.ts').RequestAuth } = {};
    handshakes.set(request, pending);
    const response = await app.fetch(request);
    const auth = pending.auth;
    if (response.status !== 200 || auth === undefined) {
      const detail = await refusalReason(response);
      const code = response.status >= 400 && response.status < 500 ? 4000 + response.status : 1011;
      this.wss.handleUpgrade(req, socket, head, (ws) => ws.close(code, detail));
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws: WebSocket) => {
      const session = new SocketSession(ws, {
        ctx: this.ctx,
        threads: this.threads,
        auth,
        // What the app saw: the bundled services' guard took the edge's internal header off (internal-auth.ts).
        headers: request.headers,
        thread: this.threads.get(threadId),
      });
      this.sessions.add(session);
      ws.on('close', () => this.sessions.delete(session));
    });
  }
}

/** The refusal's one line (`detail`), cut to what a close frame holds (123 bytes). */
async function refusalReason(response: Response): Promise<string> {
  let detail = response.statusText || `HTTP ${response.status}`;
  try {
    const body = (await response.json()) as { detail?: unknown };
    if (typeof body.detail === 'string') detail = body.detail;
    else if (Array.isArray(body.detail)) detail = 'Invalid request.';
  } catch {
    // not JSON: the status text says it
  }
  let reason = detail;
  while (Buffer.byteLength(reason) > 123) reason = reason.slice(0, -1);
  return reason;
}
