/**
 * Errors of the edge itself. Each carries a stable code and an HTTP status;
 * one handler renders them as JSON `{"detail", "code"}` and nothing else (no
 * stack trace ever leaves the process).
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

export const badRequest = (detail: string, code = 'bad_request') => new GatewayError(400, code, detail);
export const payloadTooLarge = (limit: number) =>
  new GatewayError(413, 'body_too_large', `Request body larger than ${limit} bytes`);
export const badGateway = (detail: string, cause?: unknown) =>
  new GatewayError(502, 'upstream_unreachable', detail, { cause });
export const gatewayTimeout = (detail: string) => new GatewayError(504, 'upstream_timeout', detail);
export const storeUnavailable = () => new GatewayError(503, 'store_unavailable', 'Rate limit store unavailable');
export const identityHeaderTooLong = (header: string, max: number) =>
  new GatewayError(400, 'identity_header_too_long', `${header} header longer than ${max} bytes (MAX_IDENTITY_LENGTH)`);
