/**
 * Errors of the edge itself. Each carries a stable code and an HTTP status, and renders itself as JSON
 * `{"detail", "code"}` (toJSON) and nothing else: the edge's handler, the listener's parser and adapter errors and
 * the admin listener all send that, and no stack trace ever leaves the process. The services answer in the public
 * API's shape instead (services/shared/http-errors.ts).
 */
export class GatewayError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(detail, options);
    this.name = 'GatewayError';
  }

  toJSON(): { detail: string; code: string } {
    return { detail: this.message, code: this.code };
  }
}

export const internalError = () => new GatewayError(500, 'internal_error', 'Internal gateway error');
export const routeNotFound = () => new GatewayError(404, 'not_found', 'Not found');
/** A deployment with no route here (unknown, not deployed yet, deleted); `id` null when the name was no id at all. */
export const deploymentNotFound = (id: string | null) =>
  new GatewayError(404, 'deployment_not_found', id === null ? 'Deployment not found' : `Deployment ${id} not found`);
export const badRequest = (detail: string, code = 'bad_request') => new GatewayError(400, code, detail);
export const payloadTooLarge = (limit: number) =>
  new GatewayError(413, 'body_too_large', `Request body larger than ${limit} bytes`);
export const badGateway = (detail: string, cause?: unknown) =>
  new GatewayError(502, 'upstream_unreachable', detail, { cause });
export const gatewayTimeout = (detail: string) => new GatewayError(504, 'upstream_timeout', detail);
export const storeUnavailable = () => new GatewayError(503, 'store_unavailable', 'Rate limit store unavailable');
export const identityHeaderTooLong = (header: string, max: number) =>
  new GatewayError(400, 'identity_header_too_long', `${header} header longer than ${max} bytes (MAX_IDENTITY_LENGTH)`);
