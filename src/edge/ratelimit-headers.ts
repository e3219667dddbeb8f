import type { BucketOutcome } from '../limiter/types.ts';
import type { Limit } from '../rules/types.ts';

/**
 * `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-11),
 * one list item per applied bucket:
 *   RateLimit-Policy: "runs-query.api-key";q=15;w=10
 *   RateLimit: "runs-query.api-key";r=14;t=1
 * `r` is whole tokens left; `t` the seconds until one more token, rounded up.
 * The policy header depends only on the limits, so it is built once per rule
 * (see `policyHeader`) and reused.
 */
export function policyHeader(limits: readonly Limit[]): string {
  return limits.map((l) => `"${l.policy}";q=${l.count};w=${l.perSeconds}`).join(', ');
}

export function rateLimitHeader(limits: readonly Limit[], buckets: readonly BucketOutcome[]): string {
  let out = '';
  for (let i = 0; i < limits.length; i++) {
    const b = buckets[i]!;
    if (i > 0) out += ', ';
    out += `"${limits[i]!.policy}";r=${b.remaining};t=${Math.ceil(b.msToNextToken / 1000)}`;
  }
  return out;
}

/** Seconds until every bucket has a token, rounded up; at least 1 for a denial. */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
}
