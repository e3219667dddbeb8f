import { randomUUID } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { GatewayError, writeError } from '../errors.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { forward, type ForwardOptions, type Forwarding, type Upstream } from '../proxy/forward.ts';
import { admission, asGatewayError, deniedBody, type AdmissionOptions, type AdmissionRecord } from './admission.ts';
import { requestRecorder } from './request-record.ts';
import type { RunHolds } from './run-holds.ts';
import { settleSlots } from './slot-hold.ts';

export interface EdgeOptions extends AdmissionOptions {
  readonly metrics?: Metrics;
  /** True once the gateway is draining: responses then close their connection. */
  readonly draining?: () => boolean;
  readonly forward: ForwardOptions;
  readonly log: Logger;
  /** Where in-flight slots held `until: run` wait for their run (absent: released when the response ends). */
  readonly runs?: RunHolds;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The client's `x-request-id` when it is a sane one, else a fresh id. */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * One request through the edge, on Node's own request and response objects
 * (the hot path stays off the Web Request/Response layer): request id, then
 * admission (admission.ts: path, route, identity, limit, upstream; the same
 * as a WebSocket upgrade's), then 429 or streamed forwarding.
 * Every failure becomes a JSON error with its status; nothing throws out.
 */
export function edgeHandler(options: EdgeOptions) {
  const { log, metrics } = options;
  const draining = options.draining ?? (() => false);
  const recordRequest = requestRecorder(log, metrics);
  const admit = admission(options);

  return async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const requestId = requestIdOf(req);
    const method = req.method ?? 'GET';
    const record: AdmissionRecord = { path: '', deployment: undefined, verdict: null };
    let upstream: Upstream | null = null;
    let status = 0;
    let forwarded: Record<string, string | string[]> | null = null;
    let contentLocation: string | undefined;
    try {
      const admitted = await admit(req, requestId, record);
      const extra: OutgoingHttpHeaders = record.verdict
        ? { ...record.verdict.headers, 'x-request-id': requestId }
        : { 'x-request-id': requestId };
      if (draining()) extra.connection = 'close';
      if (!admitted.admitted) {
        status = 429;
        sendJson(res, 429, deniedBody(admitted.verdict), extra);
        return;
      }
      ({ upstream, forwarded } = admitted);
      // A refused request is sent again to where its destination is then (a rollover may have moved it).
      const to: Forwarding = {
        upstream,
        again: admitted.destination.upstream,
        req,
        res,
        path: admitted.upstreamPath,
        headers: forwarded,
        extraHeaders: extra,
      };
      const result = await forward(to, options.forward, metrics);
      status = result.status;
      contentLocation = result.contentLocation;
    } catch (err) {
      const error = asGatewayError(err);
      status = error.status;
      if (error.status >= 500 && !(err instanceof GatewayError)) log.error({ err, requestId }, 'edge failure');
      // A limit that applied (a token was taken) shows on the error too: 413, 502, 504 after the limit step.
      sendError(res, error, { ...record.verdict?.headers, 'x-request-id': requestId });
    } finally {
      const { path, deployment, verdict } = record;
      // In-flight slots: given back now that the response has ended, or when the run it started ends.
      if (verdict?.lease !== undefined)
        settleSlots(verdict, { status, contentLocation, upstream, headers: forwarded }, options.runs);
      recordRequest({ requestId, method, path, verdict, status, upstream, deployment, started });
    }
  };
}

/** `headers`: a fresh object of the response's own headers (the connection header may be added to it). */
function sendError(res: ServerResponse, error: GatewayError, headers: OutgoingHttpHeaders): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  // An unread request body would otherwise be drained before the connection can be reused.
  if (error.status === 413 || error.status === 400) headers.connection = 'close';
  writeError(res, error, headers);
}

function sendJson(res: ServerResponse, status: number, body: string, headers: OutgoingHttpHeaders): void {
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
