import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { Transform, type Readable } from 'node:stream';
import { Pool, errors as undiciErrors, type Dispatcher } from 'undici';
import { badGateway, GatewayError, gatewayTimeout, payloadTooLarge } from '../errors.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { clientResponseHeaders } from './headers.ts';
import { targetSocketPath } from './socket-target.ts';

/**
 * Streamed forwarding over undici's dispatcher: the request body flows from
 * the client socket to the upstream and the response body back, chunk by
 * chunk, never buffered (server-sent events reach the client frame by
 * frame). A client that goes away aborts the upstream request.
 */
export interface Upstream {
  /** Its name in metrics and the access log (a fixed word: metrics labels stay bounded). */
  readonly name: string;
  /** Its name in error messages, when more precise than `name` (`deployment <id>`). */
  readonly display?: string;
  /** The upstream URL's path without its trailing slash ('' at the root): every forwarded path goes under it. */
  readonly basePath: string;
  readonly pool: Pool;
  /** Its URL's origin: where a WebSocket upgrade connects (upgrade.ts), outside the pool. Without it, upgrades 502. */
  readonly origin?: string;
  /** The Unix socket it is reached on (a revision's `unix:` target), instead of the origin's host and port. */
  readonly socketPath?: string;
  /** Added to every request sent to it: a bundled service's proof that the edge sent it (services/internal-auth.ts). */
  readonly requestHeaders?: Readonly<Record<string, string>>;
}

/**
 * `connections`: most sockets to this upstream at once; a request beyond them waits in the pool for a free one. `url`
 * is a URL, or `unix:<path>` for a Unix socket (a revision's Agent Server).
 */
export function createUpstream(
  name: string,
  url: string,
  connections: number,
  { display, requestHeaders }: { display?: string; requestHeaders?: Readonly<Record<string, string>> } = {},
): Upstream {
  const socketPath = targetSocketPath(url);
  const parsed = new URL(socketPath === null ? url : 'http://localhost');
  return {
    name,
    ...(display !== undefined && { display }),
    basePath: parsed.pathname.replace(/\/$/, ''),
    origin: parsed.origin,
    ...(socketPath !== null && { socketPath }),
    pool: new Pool(parsed.origin, {
      connections,
      keepAliveTimeout: 30_000,
      ...(socketPath !== null && { socketPath }),
    }),
    ...(requestHeaders !== undefined && Object.keys(requestHeaders).length > 0 && { requestHeaders }),
  };
}

export interface ForwardOptions {
  /** Time allowed for the upstream's response headers. An open stream is never cut afterwards. */
  readonly headersTimeoutMs: number;
  readonly maxBodyBytes: number;
}

export interface ForwardResult {
  readonly status: number;
  /** True when the client went away before the response ended. */
  readonly aborted: boolean;
  /** The upstream's `Content-Location` (the run a response started, for in-flight slots held until it ends). */
  readonly contentLocation?: string;
}

/** One request to forward. */
export interface Forwarding {
  readonly upstream: Upstream;
  /**
   * Where a refused request is sent again (see Exchange): the upstream of its destination at that moment, which after
   * a deployment's rollover is its new revision's, or null to give up. Default: `upstream` again.
   */
  readonly again?: () => Upstream | null;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** The normalised path plus query, under the upstream's base path. */
  readonly path: string;
  readonly headers: Record<string, string | string[]>;
  /** Added to the upstream's response headers (rate-limit headers, request id). */
  readonly extraHeaders: OutgoingHttpHeaders;
}

/**
 * Forwards `req` to its upstream at `path` and writes the answer to `res`, with `extraHeaders` added. Rejects with a
 * GatewayError (413, 502, 504) when nothing was written yet; once the response has started, a failure ends it instead.
 */
export function forward(
  { upstream, again, req, res, path, headers, extraHeaders }: Forwarding,
  options: ForwardOptions,
  metrics?: Metrics,
): Promise<ForwardResult> {
  const body = requestBody(req, options.maxBodyBytes);
  // The request is allowed and its size acceptable: now ask for the body a client holds back until told to continue.
  const expect = req.headers.expect;
  if (expect !== undefined && body !== null && EXPECTS_CONTINUE.test(expect)) res.writeContinue();
  const request: Dispatcher.DispatchOptions = {
    path: upstream.basePath + path,
    method: req.method as Dispatcher.HttpMethod,
    headers: upstream.requestHeaders ? { ...headers, ...upstream.requestHeaders } : headers,
    body,
    headersTimeout: options.headersTimeoutMs,
    bodyTimeout: 0, // streams may idle between events; the client's close ends them
  };
  return new Promise((resolve, reject) => {
    const exchange = new Exchange(upstream, again, request, res, extraHeaders, metrics, (err) => {
      const { contentLocation } = exchange;
      if (err === null) return resolve({ status: exchange.status, aborted: false, contentLocation });
      if (exchange.clientGone) return resolve({ status: exchange.status || 499, aborted: true, contentLocation });
      if (!res.headersSent) return reject(upstreamFailure(err, exchange.upstream, options));
      endStarted(res, exchange.eventStream);
      resolve({ status: exchange.status, aborted: false, contentLocation });
    });
    res.on('close', () => exchange.clientClosed());
    exchange.start();
  });
}

/**
 * One request's exchange with the upstream, as an undici dispatch handler:
 * the response head becomes the client's (hop-by-hop headers dropped, the
 * edge's added), each body chunk is written through with the client's
 * backpressure, and a client that goes away aborts the upstream request.
 */
class Exchange implements Dispatcher.DispatchHandler {
  status = 0;
  eventStream = false;
  contentLocation: string | undefined = undefined;
  clientGone = false;
  private controller: Dispatcher.DispatchController | null = null;
  private settled = false;
  /** Sent again once if refused: only when nothing reached the upstream and nothing can change twice. */
  private retryable: boolean;
  private readonly started = performance.now();

  constructor(
    public upstream: Upstream,
    private readonly again: (() => Upstream | null) | undefined,
    private request: Dispatcher.DispatchOptions,
    private readonly res: ServerResponse,
    private readonly extraHeaders: OutgoingHttpHeaders,
    private readonly metrics: Metrics | undefined,
    private readonly done: (err: Error | null) => void,
  ) {
    this.retryable = request.body === null && IDEMPOTENT.has(request.method);
  }

  start(): void {
    this.upstream.pool.dispatch(this.request, this);
  }

  clientClosed(): void {
    if (this.settled || this.res.writableFinished) return;
    this.clientGone = true;
    this.controller?.abort(new Error('client closed the connection'));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.clientGone) controller.abort(new Error('client closed the connection'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    const { res, metrics } = this;
    this.status = statusCode;
    this.retryable = false;
    const location = headers['content-location'];
    if (typeof location === 'string') this.contentLocation = location;
    metrics?.upstreamSeconds.observe(
      { upstream: this.upstream.name, status: statusCode },
      (performance.now() - this.started) / 1000,
    );
    const out = Object.assign(clientResponseHeaders(headers), this.extraHeaders);
    this.eventStream = String(out['content-type'] ?? '').startsWith('text/event-stream');
    if (this.eventStream) metrics?.sseStreams.inc();
    res.writeHead(statusCode, out);
    // A stream's client sees the status before the first event; a sized answer leaves with its body, in one write.
    if (this.eventStream || out['content-length'] === undefined) res.flushHeaders();
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.res.write(chunk)) return;
    controller.pause();
    this.res.once('drain', () => controller.resume());
  }

  onResponseEnd(): void {
    this.res.end();
    this.settle(null);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.retryable && !this.clientGone && isRefused(err)) {
      this.retryable = false;
      // Refused: its destination may have moved meanwhile (a rollover retires the old revision's pool).
      const next = this.again === undefined ? this.upstream : this.again();
      if (next !== null) {
        const path = next.basePath + this.request.path.slice(this.upstream.basePath.length);
        if (next !== this.upstream) this.request = { ...this.request, path };
        this.upstream = next;
        this.start();
        return;
      }
    }
    this.settle(err);
  }

  private settle(err: Error | null): void {
    if (this.settled) return;
    this.settled = true;
    if (this.eventStream) this.metrics?.sseStreams.dec();
    this.done(err);
  }
}

const IDEMPOTENT = new Set<string>(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);
/** The expectation Node hands to `checkContinue` (its own test, node:_http_server). */
const EXPECTS_CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i;

function isRefused(err: unknown): boolean {
  return (err as { code?: string }).code === 'ECONNREFUSED';
}

/** The request body to send: none, the socket stream itself, or the stream behind a size guard. */
function requestBody(req: IncomingMessage, maxBytes: number): Readable | null {
  const length = req.headers['content-length'];
  if (length !== undefined) {
    if (Number(length) > maxBytes) throw payloadTooLarge(maxBytes);
    return Number(length) === 0 ? null : req; // Node's parser holds the body to its declared length
  }
  if (req.headers['transfer-encoding'] === undefined) return null; // HTTP/1.1: no length, no chunks, no body
  let seen = 0;
  const guard = new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      done(seen > maxBytes ? payloadTooLarge(maxBytes) : null, chunk);
    },
  });
  req.on('error', (e) => guard.destroy(e));
  return req.pipe(guard);
}

/**
 * A response already under way cannot turn into an error: an event stream ends cleanly, anything else is cut so the
 * client sees it is incomplete.
 */
function endStarted(res: ServerResponse, eventStream: boolean): void {
  if (eventStream) res.end();
  else res.destroy();
}

/** The error a failed exchange answers: its own (a 413), a timeout 504, anything else 502 naming the upstream. */
function upstreamFailure(err: unknown, upstream: Upstream, options: ForwardOptions): GatewayError {
  const name = upstream.display ?? upstream.name;
  if (err instanceof GatewayError) return err;
  if ((err as { cause?: unknown }).cause instanceof GatewayError) return (err as { cause: GatewayError }).cause;
  if (err instanceof undiciErrors.HeadersTimeoutError) {
    return gatewayTimeout(`Upstream ${name} sent no response headers within ${options.headersTimeoutMs} ms`);
  }
  if (err instanceof undiciErrors.ConnectTimeoutError) {
    return gatewayTimeout(`Upstream ${name} did not accept a connection in time`);
  }
  const code = (err as { code?: string }).code;
  return badGateway(`Upstream ${name} unreachable${code ? ` (${code})` : ''}`, err);
}
