import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import {
  badRequest,
  deploymentNotFound,
  deploymentUnavailable,
  GatewayError,
  identityHeaderTooLong,
  internalError,
  invalidPath,
  storeUnavailable,
} from '../errors.ts';
import type { Upstream } from '../proxy/forward.ts';
import { upstreamRequestHeaders } from '../proxy/headers.ts';
import { InvalidPathError, normalizePath, type EscapedSlashes } from '../rules/normalize-path.ts';
import { DEPLOYMENT_ID, type Destination } from '../routing/router.ts';
import type { KeyCheck } from './key-check.ts';
import type { TrustedProxies } from './client-ip.ts';
import { identityReader, type RequestIdentity } from './request-identity.ts';
import type { LimitRequest, Verdict } from './limit.ts';
import { requestTarget } from './request-target.ts';
import { tenantOf } from './tenant-scope.ts';

/** What admission needs: the same settings for a request and for a WebSocket upgrade. */
export interface AdmissionOptions {
  readonly limit: (request: LimitRequest) => Promise<Verdict | null>;
  /** The default deployment's id (the gateway's own): counted as the bare paths are (tenant-scope.ts). */
  readonly ownDeployment?: () => string | null;
  /**
   * KEY_CHECK: an `x-api-key` the registry does not know is never a bucket of its own: the request is limited as if
   * it carried no key (by its other identities), and forwarded with the key; the upstream authenticates.
   */
  readonly keyCheck?: KeyCheck;
  /** Where a request goes, from its normalised path and Host (route.ts). */
  readonly route: (path: string, host: string | undefined) => Destination;
  readonly trust: TrustedProxies;
  readonly ipv6PrefixBits: number;
  /** MAX_IDENTITY_LENGTH: a longer identity header answers 400, counted as a request without identity headers. */
  readonly maxIdentityLength?: number;
  /** ESCAPED_SLASHES: what `%2F` / `%5C` in a path does (default `reject`). */
  readonly escapedSlashes?: EscapedSlashes;
}

/**
 * What admission learnt of a request so far, filled in step by step: the front end's request log and its error
 * answer read it whether admission let the request in, refused it, or failed half-way.
 */
export interface AdmissionRecord {
  path: string;
  deployment: string | undefined;
  verdict: Verdict | null;
}

/** A request let in: where it goes, and what the upstream is told. */
export interface Admitted {
  readonly admitted: true;
  readonly destination: Destination;
  /** The path and query the upstream gets (a deployment's without its `/deployments/{id}` prefix). */
  readonly upstreamPath: string;
  readonly upstream: Upstream;
  /** The request's headers as the upstream gets them (header hygiene, X-Forwarded-*, the request id). */
  readonly forwarded: Record<string, string | string[]>;
  readonly identity: RequestIdentity;
  /** Whose allowance its counts come out of (tenant-scope.ts): later counts of the same exchange use it too. */
  readonly tenant: string;
  readonly verdict: Verdict | null;
}

/** A request over its limit: answered 429 (the verdict's headers and `deniedBody`). */
export interface Denied {
  readonly admitted: false;
  readonly verdict: Verdict;
}

/** What a front end adds to admission: the WebSocket upgrade's own steps. */
export interface AdmissionHooks {
  /** The headers the limit counts by (default: the request's). */
  readonly countedHeaders?: (headers: IncomingHttpHeaders) => IncomingHttpHeaders;
  /** Runs once the identity is read, before any token is spent; throws a GatewayError to refuse. */
  readonly beforeLimit?: (identity: RequestIdentity) => void;
}

/**
 * The edge's one admission pipeline, for HTTP requests (handler.ts) and WebSocket upgrades (upgrade.ts) alike:
 * target and normalised path, Host, route, identity, tenant, the limit step (a failed store that fails closed: 503;
 * over the limit: Denied), an overlong identity header (400), then the upstream: an unknown deployment is 404, one
 * that exists but is not served now 503, whichever front end asks. Throws a GatewayError for every refusal but the
 * 429, which the front end writes its own way. Every request is counted before it is refused (probing deployment
 * ids spends tokens).
 */
export function admission(options: AdmissionOptions) {
  const { limit, keyCheck, route, trust, ipv6PrefixBits } = options;
  const maxIdentityLength = options.maxIdentityLength ?? 256;
  const escapedSlashes = options.escapedSlashes ?? 'reject';
  const readIdentity = identityReader({ trust, ipv6PrefixBits, keyCheck, maxIdentityLength });

  return async function admit(
    req: IncomingMessage,
    requestId: string,
    record: AdmissionRecord,
    hooks: AdmissionHooks = {},
  ): Promise<Admitted | Denied> {
    const target = requestTarget(req.url ?? '');
    record.path = normalizePath(target, escapedSlashes);
    const destination = route(record.path, requestHost(req.headers.host));
    if (destination.kind === 'deployment' && DEPLOYMENT_ID.test(destination.deploymentId))
      record.deployment = destination.deploymentId;
    const headers = hooks.countedHeaders === undefined ? undefined : hooks.countedHeaders(req.headers);
    const read = readIdentity(req, headers);
    const identity = read instanceof Promise ? await read : read; // awaited only on a registry lookup
    hooks.beforeLimit?.(identity);
    const tenant = tenantOf(destination, options.ownDeployment?.() ?? null);
    const { counted } = identity;
    const method = req.method ?? 'GET';
    const verdict = await limit({ method, path: destination.path, headers: counted.headers, ip: counted.ip, tenant });
    record.verdict = verdict;
    // The store failed and the rule fails closed: no bucket decided, so no rate-limit headers.
    if (verdict?.decision === 'store-down') throw storeUnavailable();
    if (verdict?.decision === 'denied') return { admitted: false, verdict };
    if (identity.overlong !== null) throw identityHeaderTooLong(identity.overlong, maxIdentityLength);
    const upstream = destination.upstream();
    if (upstream === null) throw missingDeployment(destination, record.deployment);
    const forwarded = upstreamRequestHeaders(req.headers, {
      clientIp: identity.clientIp,
      trustedPeer: identity.trustedPeer,
      proto: (req.socket as TLSSocket).encrypted ? 'https' : 'http',
      requestId,
    });
    // The stripped prefix, for an app that builds absolute links (X-Forwarded-Prefix, as other proxies send it).
    if (destination.kind === 'deployment' && destination.prefix !== '')
      forwarded['x-forwarded-prefix'] = destination.prefix;
    const q = target.indexOf('?');
    const upstreamPath = destination.path + (q === -1 ? '' : target.slice(q));
    return { admitted: true, destination, upstreamPath, upstream, forwarded, identity, tenant, verdict };
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

/** Any failure as the GatewayError it answers (a bug: 500). */
export function asGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  if (err instanceof InvalidPathError) return invalidPath(err.message);
  return internalError();
}

/** The 429's body, the same for a request and an upgrade. */
export function deniedBody(verdict: Verdict): string {
  return JSON.stringify({
    detail: 'Rate limit exceeded',
    rule: verdict.match.rule.id,
    category: verdict.category,
    retry_after: verdict.retryAfter,
    ...(verdict.guard !== null && { guard: verdict.guard }),
  });
}
