import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer, type RawData } from 'ws';

/**
 * A real WebSocket upstream (package `ws`) on port 0: it records every upgrade that reached it (path, headers) and
 * every message, and by default echoes each message back. A test may replace what a new connection does
 * (`onConnection`) or answer some upgrades without switching (`refuse`).
 */
export interface WsUpstream {
  readonly url: string;
  readonly port: number;
  readonly upgrades: { readonly path: string; readonly headers: IncomingHttpHeaders }[];
  /** Text of every message received, in order, over all connections. */
  readonly messages: string[];
  readonly sockets: Set<WebSocket>;
  /** Plain HTTP requests that reached it (no upgrade). */
  readonly requests: { readonly method: string; readonly path: string }[];
  onConnection: (ws: WebSocket, req: IncomingMessage) => void;
  /** An upgrade whose path starts with a key here is answered with that status instead. */
  readonly refuse: Map<string, number>;
  close(): Promise<void>;
}

export function echo(ws: WebSocket): void {
  ws.on('message', (data: RawData, binary: boolean) => ws.send(data as Buffer, { binary }));
}

export async function startWsUpstream(): Promise<WsUpstream> {
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: true });
  const server: Server = createServer((req, res) => {
    up.requests.push({ method: req.method ?? '', path: req.url ?? '' });
    req.resume();
    // `/slow...` answers after 300 ms, in two writes.
    const slow = (req.url ?? '').startsWith('/slow');
    res.writeHead(200, { 'content-type': 'text/plain' });
    if (!slow) return void res.end('plain');
    res.write('pl');
    setTimeout(() => res.end('ain'), 300);
  });
  server.on('upgrade', (req: IncomingMessage, socket, head) => {
    const path = req.url ?? '';
    up.upgrades.push({ path, headers: req.headers });
    for (const [prefix, status] of up.refuse)
      if (path.startsWith(prefix)) {
        socket.end(`HTTP/1.1 ${status} Refused\r\ncontent-type: text/plain\r\ncontent-length: 7\r\n\r\nrefused`);
        return;
      }
    wss.handleUpgrade(req, socket, head, (ws) => {
      up.sockets.add(ws);
      // What a hostile client sends past the edge is the upstream's to refuse: `ws` closes such a socket itself.
      ws.on('error', () => {});
      ws.on('close', () => up.sockets.delete(ws));
      ws.on('message', (data: RawData) => up.messages.push(String(data)));
      up.onConnection(ws, req);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const up: WsUpstream = {
    url: `http://127.0.0.1:${port}`,
    port,
    upgrades: [],
    messages: [],
    sockets: new Set(),
    requests: [],
    onConnection: echo,
    refuse: new Map(),
    close: async () => {
      for (const ws of up.sockets) ws.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return up;
}

/** Opens a `ws` client through `url` (http:// is taken as ws://); rejects with the HTTP status when refused. */
export function openClient(
  url: string,
  headers: Record<string, string> = {},
  options: { perMessageDeflate?: boolean; protocols?: string[] } = {},
): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), options.protocols ?? [], {
      headers,
      perMessageDeflate: options.perMessageDeflate ?? false,
    });
    inbox(ws);
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        reject(
          Object.assign(new Error(`upgrade refused: ${res.statusCode}`), {
            status: res.statusCode,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        ),
      );
    });
    ws.once('error', reject);
  });
}

/** Messages a client received and nobody has taken yet (`nextMessage`), from the moment it was made. */
const inboxes = new WeakMap<WebSocket, { queue: string[]; waiting: ((m: string) => void) | null }>();

function inbox(ws: WebSocket): { queue: string[]; waiting: ((m: string) => void) | null } {
  let box = inboxes.get(ws);
  if (box === undefined) {
    const made = { queue: [] as string[], waiting: null as ((m: string) => void) | null };
    ws.on('message', (data: RawData) => {
      const text = String(data);
      const w = made.waiting;
      made.waiting = null;
      if (w) w(text);
      else made.queue.push(text);
    });
    inboxes.set(ws, (box = made));
  }
  return box;
}

/** The next message on `ws`, as text (messages that arrived with the 101, before anyone asked, are kept). */
export function nextMessage(ws: WebSocket): Promise<string> {
  const box = inbox(ws);
  const queued = box.queue.shift();
  if (queued !== undefined) return Promise.resolve(queued);
  return new Promise((resolve, reject) => {
    const onClose = (code: number) => reject(new Error(`closed (${code}) before a message`));
    ws.once('close', onClose);
    box.waiting = (m) => {
      ws.off('close', onClose);
      resolve(m);
    };
  });
}

/** Resolves with the close code and reason once `ws` closes. */
export function closed(ws: WebSocket): Promise<{ code: number; reason: string }> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.resolve({ code: -1, reason: 'already closed' });
  return new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: String(reason) })));
}
