import { EventEmitter } from 'node:events';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { Transform, Writable, type Readable } from 'node:stream';
import { Pool, errors as undiciErrors } from 'undici';
import { badGateway, GatewayError, gatewayTimeout, payloadTooLarge } from '../errors.ts';
import type { Metrics } from '../metrics.ts';
import { clientResponseHeaders } from './headers.ts';

/**
 * Streamed forwarding over undici's dispatcher: the request body flows from
 * the client socket to the upstream and the response body back, chunk by
 * chunk, never buffered (server-sent events reach the client frame by
 * frame). A client that goes away aborts the upstream request.
 */
export interface Upstream {
  readonly name: string;
  readonly url: URL;
  readonly pool: Pool;
}

export function createUpstream(name: string, url: string, connections = 256): Upstream {
  const parsed = new URL(url);
  return { name, url: parsed, pool: new Pool(parsed.origin, { connections, keepAliveTimeout: 30_000 }) };
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
}

/**
 * Forwards `req` to `upstream` at `path` (the normalised path plus query)
 * and writes the answer to `res`, with `extraHeaders` (rate-limit headers,
 * request id) added. Throws a GatewayError (413, 502, 504) when nothing was
 * written yet; once the response has started, a failure ends it instead.
 */
export async function forward(
  upstream: Upstream,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  headers: Record<string, string | string[]>,
  extraHeaders: OutgoingHttpHeaders,
  options: ForwardOptions,
  metrics?: Metrics,
): Promise<ForwardResult> {
  const body = requestBody(req, options.maxBodyBytes);
  // An EventEmitter, not an AbortController: undici takes either, and EventTarget costs more per request.
  const abort = new EventEmitter();
  let aborted = false;
  const started = performance.now();
  let status = 0;
  let stream = false;
  const onClose = () => {
    if (res.writableFinished) return;
    aborted = true;
    abort.emit('abort');
  };
  res.once('close', onClose);
  const send = () =>
    upstream.pool.stream(
      {
        path: upstream.url.pathname === '/' ? path : upstream.url.pathname.replace(/\/$/, '') + path,
        method: req.method as string,
        headers,
        body,
        signal: abort,
        headersTimeout: options.headersTimeoutMs,
        bodyTimeout: 0, // streams may idle between events; the client's close ends them
      },
      ({ statusCode, headers: upstreamHeaders }) => {
        status = statusCode;
        metrics?.upstreamSeconds.observe({ upstream: upstream.name, status: statusCode }, (performance.now() - started) / 1000);
        const responseHeaders = clientResponseHeaders(upstreamHeaders);
        stream = String(responseHeaders['content-type'] ?? '').startsWith('text/event-stream');
        if (stream) metrics?.sseStreams.inc();
        res.writeHead(statusCode, { ...responseHeaders, ...extraHeaders });
        // A stream's client sees the status before the first event; a sized answer leaves with its body, in one write.
        if (stream || responseHeaders['content-length'] === undefined) res.flushHeaders();
        // undici destroys the writable it gets here when the upstream fails mid-body: an event
        // stream gets a sink in between, so forward can end the client's stream cleanly instead.
        return stream ? eventStreamSink(res) : res;
      },
    );
  try {
    try {
      await send();
    } catch (err) {
      // Safe to send again only when nothing reached the upstream and nothing can change twice.
      if (!isRefused(err) || body !== null || !IDEMPOTENT.has(req.method ?? '') || res.headersSent || aborted) throw err;
      await send();
    }
    return { status, aborted: false };
  } catch (err) {
    if (aborted) return { status: status || 499, aborted: true };
    if (res.headersSent) {
      endStarted(res, stream);
      return { status, aborted: false };
    }
    throw asGatewayError(err, upstream, options);
  } finally {
    res.off('close', onClose);
    if (stream) metrics?.sseStreams.dec();
  }
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);

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

/** A response already under way cannot turn into an error: an event stream ends cleanly, anything else is cut so the client sees it is incomplete. */
function endStarted(res: ServerResponse, eventStream: boolean): void {
  if (eventStream) res.end();
  else res.destroy();
}

/** Writes through to `res` with its backpressure; destroying the sink leaves `res` alone. */
function eventStreamSink(res: ServerResponse): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      if (res.write(chunk)) done();
      else res.once('drain', () => done());
    },
    final(done) {
      res.end();
      done();
    },
  });
}

function asGatewayError(err: unknown, upstream: Upstream, options: ForwardOptions): GatewayError {
  if (err instanceof GatewayError) return err;
  if ((err as { cause?: unknown }).cause instanceof GatewayError) return (err as { cause: GatewayError }).cause;
  if (err instanceof undiciErrors.HeadersTimeoutError) {
    return gatewayTimeout(`Upstream ${upstream.name} sent no response headers within ${options.headersTimeoutMs} ms`);
  }
  if (err instanceof undiciErrors.ConnectTimeoutError) {
    return gatewayTimeout(`Upstream ${upstream.name} did not accept a connection in time`);
  }
  const code = (err as { code?: string }).code;
  return badGateway(`Upstream ${upstream.name} unreachable${code ? ` (${code})` : ''}`, err);
}
