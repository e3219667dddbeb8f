import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real HTTP upstream for edge tests, on 127.0.0.1 and port 0. It records
 * every request as it arrives (before its body), so a test can tell what the
 * edge forwarded and what it never did. A handler answers; the default one
 * reads the body and answers JSON with what it saw.
 */
export interface SeenRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly rawHeaders: readonly string[];
}

export type UpstreamHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export interface TestUpstream {
  readonly url: string;
  readonly port: number;
  readonly server: Server;
  /** Every request received, in arrival order. */
  readonly seen: SeenRequest[];
  close(): Promise<void>;
}

/** Reads the body and answers 200 JSON `{method, url, bytes}`. */
export const echoJson: UpstreamHandler = (req, res) => {
  let bytes = 0;
  req.on('data', (c: Buffer) => (bytes += c.length));
  req.on('end', () => {
    const body = JSON.stringify({ method: req.method, url: req.url, bytes });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
};

export async function startUpstream(handler: UpstreamHandler = echoJson): Promise<TestUpstream> {
  const seen: SeenRequest[] = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders });
    Promise.resolve(handler(req, res)).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    server,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A loopback port that nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * An upstream that answers `ok`, except `GET /stream`: an event stream held open (one event sent) until its turn in
 * `ends` is called, so a test holds in-flight slots as long as it likes. Calling every one ends every stream.
 */
export async function startHeldStreams(): Promise<{ upstream: TestUpstream; ends: (() => void)[] }> {
  const ends: (() => void)[] = [];
  const upstream = await startUpstream(async (req, res) => {
    req.resume();
    if (req.url !== '/stream') return void res.end('ok');
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {}\n\n');
    await new Promise<void>((resolve) => ends.push(resolve));
    res.end();
  });
  return { upstream, ends };
}
