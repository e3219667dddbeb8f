import type { BucketOutcome } from '../limiter/types.ts';
import type { Limit } from '../rules/types.ts';

/**
 * `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-11),
 * one list item per applied bucket:
 *   RateLimit-Policy: "runs-query.api-key";q=15;w=10
 *   RateLimit: "runs-query.api-key";r=14;t=1
 * `r` is whole tokens left; `t` the seconds until one more token, rounded up.
 * In-flight limits are items too (see `policyItem`).
 * The policy header depends only on the limits, so it is built once per rule
 * (see `policyHeader`) and reused.
 */
export function policyHeader(limits: readonly Limit[]): string {
  return limits.map(policyItem).join(', ');
}

/**
 * An in-flight limit is a quota of concurrent requests (draft-11 §5's quota unit): `"runs.api-key";q=5;qu="concurrent-requests"`,
 * with no window. Its `RateLimit` item has `r` (free slots) and no `t`: nobody knows when a response will end.
 */
function policyItem(l: Limit): string {
  return l.until === null
    ? `"${l.policy}";q=${l.count};w=${l.perSeconds}`
    : `"${l.policy}";q=${l.count};qu="concurrent-requests"`;
}

export function rateLimitHeader(limits: readonly Limit[], buckets: readonly BucketOutcome[]): string {
  let out = '';
  for (let i = 0; i < limits.length; i++) {
    const b = buckets[i]!;
    if (i > 0) out += ', ';
    out +=
      limits[i]!.until === null
        ? `"${limits[i]!.policy}";r=${b.remaining};t=${Math.ceil(b.msToNextToken / 1000)}`
        : `"${limits[i]!.policy}";r=${b.remaining}`;
  }
  return out;
}

/** Seconds until every bucket has a token, rounded up; at least 1 for a denial. */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
}
