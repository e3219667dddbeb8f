import { timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { adminTokenRequired, errorResponse, operatorEndpointsOff } from '../errors.ts';

/**
 * The operator's endpoints of the admin listener (/keys, /limits): only with the operator token (ADMIN_TOKEN) as
 * `authorization: Bearer <token>`, compared in constant time. Without a token configured they are off (403, saying how
 * to turn them on): the admin listener is reachable from the host's loopback, where tenants' code runs too.
 */
export function operatorOnly(token: string | null): MiddlewareHandler {
  const expected = token === null ? null : Buffer.from(`Bearer ${token}`);
  return async function operatorOnly(c, next) {
    if (expected === null) return errorResponse(operatorEndpointsOff());
    const given = Buffer.from(c.req.header('authorization') ?? '');
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      return errorResponse(adminTokenRequired());
    await next();
  };
}
