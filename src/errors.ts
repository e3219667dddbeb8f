import { STATUS_CODES, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';

/**
 * Every error the edge answers, by its stable code: the status it answers and the detail it says when the error has
 * nothing more precise to say. This catalogue is the only place a code is spelt; the services answer in the public
 * API's shape instead, `{"detail"}` (services/shared/http-errors.ts).
 */
export const ERRORS = {
  bad_request: { status: 400, detail: 'Malformed request' },
  invalid_path: { status: 400, detail: 'Invalid request path' },
  repeated_identity_header: { status: 400, detail: 'Repeated identity header' },
  identity_header_too_long: { status: 400, detail: 'Identity header too long (MAX_IDENTITY_LENGTH)' },
  no_client_address: { status: 400, detail: 'Client address unknown (connection closed)' },
  admin_token_required: { status: 401, detail: 'Unauthorized: this needs the operator token (ADMIN_TOKEN)' },
  key_management_off: { status: 403, detail: 'Key management is off' },
  operator_endpoints_off: { status: 403, detail: 'Operator endpoints are off' },
  not_found: { status: 404, detail: 'Not found' },
  key_not_found: { status: 404, detail: 'No API key has this id' },
  deployment_not_found: { status: 404, detail: 'Deployment not found' },
  workspace_conflict: { status: 409, detail: 'Workspace belongs to another organisation' },
  request_timeout: { status: 408, detail: 'Request not received in time' },
  body_too_large: { status: 413, detail: 'Request body too large' },
  too_many_websockets: { status: 429, detail: 'Too many open WebSockets from this client address' },
  too_many_connections: { status: 429, detail: 'Too many open connections from this client address' },
  too_many_token_failures: { status: 429, detail: 'Too many failed operator-token attempts from this address' },
  headers_too_large: { status: 431, detail: 'Request headers too large' },
  internal_error: { status: 500, detail: 'Internal gateway error' },
  upstream_unreachable: { status: 502, detail: 'Upstream unreachable' },
  store_unavailable: { status: 503, detail: 'Rate limit store unavailable' },
  deployment_unavailable: { status: 503, detail: 'Deployment not serving now' },
  gateway_draining: { status: 503, detail: 'Gateway draining: connect again' },
  upstream_timeout: { status: 504, detail: 'Upstream did not answer in time' },
} as const satisfies Record<string, { readonly status: number; readonly detail: string }>;

export type ErrorCode = keyof typeof ERRORS;

/**
 * An error of the edge itself: a code of the catalogue, its status, and a detail. It renders as `{"detail", "code"}`
 * and nothing else (no stack trace ever leaves the process), through one of the adapters below.
 */
export class GatewayError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    detail: string = ERRORS[code].detail,
    options?: { cause?: unknown },
  ) {
    super(detail, options);
    this.name = 'GatewayError';
    this.status = ERRORS[code].status;
  }

  /** The edge's error body: every adapter below sends this. */
  toJSON(): { detail: string; code: ErrorCode } {
    return { detail: this.message, code: this.code };
  }
}

export const internalError = () => new GatewayError('internal_error');
export const routeNotFound = () => new GatewayError('not_found');
/** A deployment with no route here (unknown, not deployed yet, deleted); `id` null when the name was no id at all. */
export const deploymentNotFound = (id: string | null) =>
  new GatewayError('deployment_not_found', id === null ? undefined : `Deployment ${id} not found`);
/**
 * A deployment that exists but has no process serving it now: starting (the gateway restarted, or its process is
 * started again after a crash; try again shortly) or failed to start again (its owner reads why in the deployment's
 * `serving_error`; the edge never tells the public the reason).
 */
export const deploymentUnavailable = (id: string, why: 'starting' | 'failed') =>
  new GatewayError(
    'deployment_unavailable',
    why === 'starting'
      ? `Deployment ${id} is starting; try again in a few seconds`
      : `Deployment ${id} is not serving: its revision could not be started again (the deployment's serving_error says why)`,
  );
/** The operator's endpoints of the admin listener (admin/operator-only.ts). */
export const adminTokenRequired = () =>
  new GatewayError('admin_token_required', 'Send the operator token: authorization: Bearer <ADMIN_TOKEN>');
export const operatorEndpointsOff = () =>
  new GatewayError(
    'operator_endpoints_off',
    'Operator endpoints are off: start the gateway with ADMIN_TOKEN set (the operator token), then send it as "authorization: Bearer <ADMIN_TOKEN>"',
  );
export const keyManagementOff = (detail: string) => new GatewayError('key_management_off', detail);
export const keyNotFound = (id: string) => new GatewayError('key_not_found', `No API key has id "${id}"`);
export const workspaceConflict = (detail: string) => new GatewayError('workspace_conflict', detail);
export const badRequest = (detail: string) => new GatewayError('bad_request', detail);
export const invalidPath = (reason: string) => new GatewayError('invalid_path', `Invalid request path: ${reason}`);
/** Two headers of one identity: which one counts is ambiguous. */
export const repeatedIdentityHeader = (header: string) =>
  new GatewayError('repeated_identity_header', `Repeated ${header} header`);
export const identityHeaderTooLong = (header: string, max: number) =>
  new GatewayError('identity_header_too_long', `${header} header longer than ${max} bytes (MAX_IDENTITY_LENGTH)`);
export const noClientAddress = () => new GatewayError('no_client_address');
export const payloadTooLarge = (limit: number) =>
  new GatewayError('body_too_large', `Request body larger than ${limit} bytes`);
export const headersTooLarge = () => new GatewayError('headers_too_large');
export const requestTimeout = () => new GatewayError('request_timeout');
export const badGateway = (detail: string, cause?: unknown) =>
  new GatewayError('upstream_unreachable', detail, { cause });
export const gatewayTimeout = (detail: string) => new GatewayError('upstream_timeout', detail);
export const storeUnavailable = () => new GatewayError('store_unavailable');
export const tooManyWebSockets = (max: number) =>
  new GatewayError(
    'too_many_websockets',
    `More than ${max} open WebSockets from this client address (WEBSOCKET_MAX_PER_IP)`,
  );
export const tooManyConnections = (max: number) =>
  new GatewayError(
    'too_many_connections',
    `More than ${max} open connections from this client address (HTTP_MAX_CONNECTIONS_PER_IP)`,
  );
export const tooManyTokenFailures = (max: number, windowSeconds: number) =>
  new GatewayError(
    'too_many_token_failures',
    `More than ${max} requests with a wrong operator token from this address in ${windowSeconds} s: wait`,
  );
export const draining = () => new GatewayError('gateway_draining');

/**
 * On Node's response (the edge's handler, a service listener's 413). `headers`: the response's own headers, sent
 * before the body's content type and length.
 */
export function writeError(res: ServerResponse, error: GatewayError, headers: OutgoingHttpHeaders = {}): void {
  const body = JSON.stringify(error);
  res.writeHead(error.status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** As a Web Response (the listener's adapter errors, the admin listener's 404). */
export function errorResponse(error: GatewayError, headers: Readonly<Record<string, string>> = {}): Response {
  return new Response(JSON.stringify(error), {
    status: error.status,
    headers: { ...headers, 'content-type': 'application/json' },
  });
}

/**
 * As a whole HTTP/1.1 response for a socket no request was parsed from (Node's parser gave up): there is no response
 * object to write it on, and the connection closes after it.
 */
export function rawErrorResponse(error: GatewayError, headers: Readonly<Record<string, string>> = {}): string {
  return rawJsonResponse(error.status, JSON.stringify(error), headers);
}

/** A whole JSON response on a raw socket (an upgrade request has no response object), closing the connection. */
export function rawJsonResponse(status: number, body: string, headers: Readonly<Record<string, string>> = {}): string {
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n`;
  for (const name in headers) head += `${name}: ${headers[name]}\r\n`;
  return (
    head +
    `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`
  );
}
