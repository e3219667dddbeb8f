import { randomUUID } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import {
  badRequest,
  deploymentNotFound,
  deploymentUnavailable,
  GatewayError,
  identityHeaderTooLong,
  internalError,
  invalidPath,
  storeUnavailable,
  writeError,
} from '../errors.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { forward, type ForwardOptions, type Forwarding, type Upstream } from '../proxy/forward.ts';
import { upstreamRequestHeaders } from '../proxy/headers.ts';
import { InvalidPathError, normalizePath, type EscapedSlashes } from '../rules/normalize-path.ts';
import { requestTarget } from './request-target.ts';
import { DEPLOYMENT_ID, type Destination } from '../routing/router.ts';
import type { KeyCheck } from './key-check.ts';
import type { TrustedProxies } from './client-ip.ts';
import { identityReader } from './request-identity.ts';
import type { LimitRequest, Verdict } from './limit.ts';
import { requestRecorder } from './request-record.ts';
import type { RunHolds } from './run-holds.ts';
import { settleSlots } from './slot-hold.ts';
import { tenantOf } from './tenant-scope.ts';

export interface EdgeOptions {
  readonly limit: (request: LimitRequest) => Promise<Verdict | null>;
  /** The default deployment's id (the gateway's own): counted as the bare paths are (tenant-scope.ts). */
  readonly ownDeployment?: () => string | null;
  /**
   * KEY_CHECK: an `x-api-key` the registry does not know is never a bucket of its own: the request is limited as if
   * it carried no key (by its other identities), and forwarded with the key; the upstream authenticates.
   */
  readonly keyCheck?: KeyCheck;
  readonly metrics?: Metrics;
  /** True once the gateway is draining: responses then close their connection. */
  readonly draining?: () => boolean;
  /** Where a request goes, from its normalised path and Host (route.ts). */
  readonly route: (path: string, host: string | undefined) => Destination;
  readonly trust: TrustedProxies;
  readonly ipv6PrefixBits: number;
  readonly forward: ForwardOptions;
  readonly log: Logger;
  /** MAX_IDENTITY_LENGTH: a longer identity header answers 400, counted as a request without identity headers. */
  readonly maxIdentityLength?: number;
  /** ESCAPED_SLASHES: what `%2F` / `%5C` in a path does (default `reject`). */
  readonly escapedSlashes?: EscapedSlashes;
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
 * (the hot path stays off the Web Request/Response layer): request id,
 * normalised path, client IP, limit, then 429 or streamed forwarding.
 * Every failure becomes a JSON error with its status; nothing throws out.
 */
export function edgeHandler(options: EdgeOptions) {
  const { limit, keyCheck, route, trust, ipv6PrefixBits, log, metrics } = options;
  const draining = options.draining ?? (() => false);
  const maxIdentityLength = options.maxIdentityLength ?? 256;
  const escapedSlashes = options.escapedSlashes ?? 'reject';
  const recordRequest = requestRecorder(log, metrics);
  const readIdentity = identityReader({ trust, ipv6PrefixBits, keyCheck, maxIdentityLength });

  return async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const requestId = requestIdOf(req);
    const method = req.method ?? 'GET';
    let path = '';
    let deployment: string | undefined;
    let verdict: Verdict | null = null;
    let upstream: Upstream | null = null;
    let status = 0;
    let forwarded: Record<string, string | string[]> | null = null;
    let contentLocation: string | undefined;
    try {
      const target = requestTarget(req.url ?? '');
      path = normalizePath(target, escapedSlashes);
      const host = requestHost(req.headers.host);
      // The rules see the path as its upstream does: a deployment's without the `/deployments/{id}` prefix.
      const destination = route(path, host);
      if (destination.kind === 'deployment' && DEPLOYMENT_ID.test(destination.deploymentId))
        deployment = destination.deploymentId;
      const read = readIdentity(req);
      const identity = read instanceof Promise ? await read : read; // awaited only on a registry lookup
      const { overlong } = identity;
      const { headers, ip } = identity.counted;
      const tenant = tenantOf(destination, options.ownDeployment?.() ?? null);
      verdict = await limit({ method, path: destination.path, headers, ip, tenant });
      if (verdict?.decision === 'store-down') {
        // The store failed and the rule fails closed: no bucket decided, so no rate-limit headers.
        status = 503;
        sendError(res, storeUnavailable(), { 'x-request-id': requestId });
        return;
      }
      const extra: OutgoingHttpHeaders = verdict
        ? { ...verdict.headers, 'x-request-id': requestId }
        : { 'x-request-id': requestId };
      if (draining()) extra.connection = 'close';
      if (verdict?.decision === 'denied') {
        status = 429;
        sendDenied(res, verdict, extra);
        return;
      }
      if (overlong !== null) throw identityHeaderTooLong(overlong, maxIdentityLength);
      // An unknown deployment is counted like any request (probing deployment ids spends tokens), then refused.
      upstream = destination.upstream();
      if (upstream === null) throw missingDeployment(destination, deployment);
      const q = target.indexOf('?');
      const query = q === -1 ? '' : target.slice(q);
      forwarded = upstreamRequestHeaders(req.headers, {
        clientIp: identity.clientIp,
        trustedPeer: identity.trustedPeer,
        proto: (req.socket as TLSSocket).encrypted ? 'https' : 'http',
        requestId,
      });
      // The stripped prefix, for an app that builds absolute links (X-Forwarded-Prefix, as other proxies send it).
      if (destination.kind === 'deployment' && destination.prefix !== '')
        forwarded['x-forwarded-prefix'] = destination.prefix;
      // A refused request is sent again to where its destination is then (a rollover may have moved it).
      const to: Forwarding = {
        upstream,
        again: destination.upstream,
        req,
        res,
        path: destination.path + query,
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
      sendError(res, error, { ...verdict?.headers, 'x-request-id': requestId });
    } finally {
      // In-flight slots: given back now that the response has ended, or when the run it started ends.
      if (verdict?.lease !== undefined)
        settleSlots(verdict, { status, contentLocation, upstream, headers: forwarded }, options.runs);
      recordRequest({ requestId, method, path, verdict, status, upstream, deployment, started });
    }
  };
}

/**
 * A host name or address, with or without a port (RFC 9110 §7.2: a request without one, or with an invalid one, is
 * refused); the upstream receives it as `x-forwarded-host`.
 */
const HOST = /^(?:[A-Za-z0-9._~!$&'()*+,;=%-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

export function requestHost(host: string | undefined): string {
  if (host === undefined || host === '') throw badRequest('Missing Host header');
  if (!HOST.test(host)) throw badRequest(`Invalid Host header "${host.slice(0, 64)}"`);
  return host;
}

/** No upstream for a deployment destination: 503 when it exists but is not served now, else 404. */
function missingDeployment(destination: Destination, deployment: string | undefined): GatewayError {
  const down = destination.kind === 'deployment' && deployment !== undefined ? destination.down() : undefined;
  return down === undefined ? deploymentNotFound(deployment ?? null) : deploymentUnavailable(deployment!, down);
}

export function asGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  if (err instanceof InvalidPathError) return invalidPath(err.message);
  return internalError();
}

function sendDenied(res: ServerResponse, verdict: Verdict, extra: OutgoingHttpHeaders): void {
  const body = JSON.stringify({
    detail: 'Rate limit exceeded',
    rule: verdict.match.rule.id,
    category: verdict.category,
    retry_after: verdict.retryAfter,
    ...(verdict.guard !== null && { guard: verdict.guard }),
  });
  sendJson(res, 429, body, extra);
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
