import type { IncomingMessage } from 'node:http';
import type { MiddlewareHandler } from 'hono';
import { errorResponse, tooManyTokenFailures } from '../errors.ts';

/**
 * Operator-token guesses, throttled per client address: the admin listener is reachable from the host's loopback,
 * where tenants' code runs too, and the token guards every tenant's metrics, keys and plans. After `max` answers 401
 * to one address within `windowMs`, every request of that address to a token-guarded path answers 429 with
 * Retry-After until the window is over, right token or not (else a right guess would still tell itself apart).
 * /healthz and /readyz are never throttled: probes carry no token and must not be locked out by a tenant's guesses.
 * The operator's own requests from the same address wait out the window too: the price of not telling them apart.
 */
export interface TokenGuessesOptions {
  readonly max?: number;
  readonly windowMs?: number;
  /** Addresses remembered at most (the oldest forgotten first): a flood of addresses cannot grow the process. */
  readonly maxAddresses?: number;
  readonly now?: () => number;
}

const OPEN_PATHS = new Set(['/healthz', '/readyz']);

export function throttleTokenGuesses(o: TokenGuessesOptions = {}): MiddlewareHandler {
  const max = o.max ?? 10;
  const windowMs = o.windowMs ?? 60_000;
  const maxAddresses = o.maxAddresses ?? 10_000;
  const now = o.now ?? Date.now;
  const failures = new Map<string, { start: number; count: number }>();

  return async function throttleTokenGuesses(c, next) {
    if (OPEN_PATHS.has(c.req.path)) return next();
    const address = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket.remoteAddress ?? '';
    const t = now();
    let entry = failures.get(address);
    if (entry !== undefined && t - entry.start >= windowMs) {
      failures.delete(address);
      entry = undefined;
    }
    if (entry !== undefined && entry.count >= max) {
      const retryAfter = Math.max(1, Math.ceil((entry.start + windowMs - t) / 1000));
      return errorResponse(tooManyTokenFailures(max, Math.round(windowMs / 1000)), {
        'retry-after': String(retryAfter),
      });
    }
    await next();
    if (c.res.status !== 401) return;
    if (entry === undefined) {
      if (failures.size >= maxAddresses) failures.delete(failures.keys().next().value!);
      failures.set(address, (entry = { start: t, count: 0 }));
    }
    entry.count++;
  };
}
