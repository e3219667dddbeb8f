import { cachedBucketKeys, type KeyScheme } from '../limiter/bucket-key.ts';
import { StoreError, type Bucket, type Limiter, type LimitOutcome } from '../limiter/types.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { Match, Matcher, MatchRequest } from '../rules/compile.ts';
import { identityOf } from '../rules/identity.ts';
import type { Limit } from '../rules/types.ts';
import { policyHeader, rateLimitHeader, retryAfterSeconds } from './ratelimit-headers.ts';

export type FailMode = 'open' | 'closed';
export type Decision = 'allowed' | 'denied' | 'shadow-denied' | 'store-down';

/** What the limit step decided for one request. */
export interface Verdict {
  readonly match: Match;
  /** allowed / shadow-denied: forward; denied: 429; store-down: 503 (the store failed and the rule fails closed). */
  readonly decision: Decision;
  /** The store failed and per-process fallback buckets decided. */
  readonly fellBack: boolean;
  /** Category of the bucket that ran out (denials), else of the first bucket. */
  readonly category: string;
  /** Denials: the id of the first guard whose bucket ran out (null when only the rule's own buckets did). Else null. */
  readonly guard: string | null;
  /** Response headers: RateLimit-Policy, RateLimit, and Retry-After on a denial. */
  readonly headers: Readonly<Record<string, string>>;
  readonly retryAfter?: number;
}

export interface LimitStepOptions {
  /** The current matcher; a function so a reload can swap it between requests. */
  readonly matcher: () => Matcher;
  readonly limiter: Limiter;
  /** Per-process buckets used when the store fails and the rule fails open. */
  readonly fallback: Limiter;
  readonly failMode: FailMode;
  /** Edge processes sharing the store: fallback buckets get 1/n of each limit. */
  readonly expectedInstances?: number;
  /** SHADOW=all: count and report everything, deny nothing. */
  readonly shadowAll?: boolean;
  readonly scheme: KeyScheme;
  readonly metrics?: Metrics;
  readonly storeName?: string;
  readonly onStoreError?: (err: StoreError) => void;
}

/**
 * The limit step: match the request, take a token from every applicable
 * bucket (all or none), and say what to answer. Over the limit is a value; a
 * store failure is decided here, explicitly: the rule's `fail`, else
 * FAIL_MODE, says open (fallback buckets) or closed (503).
 */
export function limitStep(options: LimitStepOptions) {
  const { matcher, limiter, fallback, failMode, scheme, metrics, onStoreError } = options;
  const instances = options.expectedInstances ?? 1;
  const storeName = options.storeName ?? 'store';
  const keyOf = cachedBucketKeys(scheme);
  const policies = new WeakMap<Match, string>();
  const policyOf = (m: Match) => {
    let p = policies.get(m);
    if (p === undefined) policies.set(m, (p = policyHeader(m.limits)));
    return p;
  };

  /** The store failed: the rule's fail mode says closed (null: answer 503) or open (per-process buckets decide). */
  async function onStoreFailure(
    err: unknown,
    match: Match,
    buckets: Bucket[],
    started: number,
  ): Promise<LimitOutcome | null> {
    if (!(err instanceof StoreError)) throw err;
    metrics?.storeSeconds.observe({ store: storeName, result: 'error' }, (performance.now() - started) / 1000);
    metrics?.storeErrors.inc({ store: storeName });
    onStoreError?.(err);
    if ((match.rule.fail ?? failMode) === 'closed') return null;
    metrics?.fallbackDecisions.inc();
    const shares =
      instances === 1
        ? buckets
        : buckets.map((b) => ({ ...b, capacity: Math.max(1, Math.ceil(b.capacity / instances)) }));
    return fallback.consume(shares);
  }

  return async function limit(request: MatchRequest): Promise<Verdict | null> {
    const match = matcher().match(request);
    if (match === null) return null;
    const { rule, limits } = match;
    const buckets = limits.map((l) => ({
      key: keyOf(l.scope, l.by, identityOf(request, l.by)),
      capacity: l.count,
      perSeconds: l.perSeconds,
    }));
    const started = performance.now();
    let outcome: LimitOutcome | null;
    let fellBack = false;
    try {
      outcome = await limiter.consume(buckets);
      metrics?.storeSeconds.observe({ store: storeName, result: 'ok' }, (performance.now() - started) / 1000);
    } catch (err) {
      outcome = await onStoreFailure(err, match, buckets, started);
      fellBack = outcome !== null;
    }
    if (outcome === null)
      return { match, decision: 'store-down', fellBack, category: limits[0]!.category, guard: null, headers: {} };

    const headers: Record<string, string> = {
      'ratelimit-policy': policyOf(match),
      ratelimit: rateLimitHeader(limits, outcome.buckets),
    };
    if (outcome.allowed)
      return { match, decision: 'allowed', fellBack, category: limits[0]!.category, guard: null, headers };
    // The rule's own limits come first, then the guards': the category is the first bucket's that ran out.
    const ranOut =
      limits[
        Math.max(
          0,
          outcome.buckets.findIndex((b) => b.msToToken > 0),
        )
      ]!;
    const guard = ranOut.guard ?? emptyGuard(limits, outcome);
    const { category } = ranOut;
    // A shadow rule's own limits never deny; its guards still do (SHADOW=all: nothing denies).
    if (options.shadowAll || (rule.shadow && guard === null))
      return { match, decision: 'shadow-denied', fellBack, category, guard, headers };
    if (guard !== null) metrics?.guardDenials.inc({ guard });
    const retryAfter = retryAfterSeconds(outcome.retryAfterMs);
    headers['retry-after'] = String(retryAfter);
    return { match, decision: 'denied', fellBack, category, guard, headers, retryAfter };
  };
}

/** The id of the first guard whose bucket ran out, or null. */
function emptyGuard(limits: readonly Limit[], outcome: LimitOutcome): string | null {
  for (let i = 0; i < limits.length; i++)
    if (limits[i]!.guard !== null && outcome.buckets[i]!.msToToken > 0) return limits[i]!.guard;
  return null;
}
