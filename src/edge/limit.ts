import { storeUnavailable } from '../errors.ts';
import { cachedBucketKeys, type KeyScheme } from '../limiter/bucket-key.ts';
import { StoreError, type Limiter, type LimitOutcome } from '../limiter/types.ts';
import { identityOf, type Match, type Matcher, type MatchRequest } from '../rules/compile.ts';
import { policyHeader, rateLimitHeader, retryAfterSeconds } from './ratelimit-headers.ts';

export type FailMode = 'open' | 'closed';

/** What the limit step decided for one request. */
export interface Verdict {
  readonly match: Match;
  readonly outcome: LimitOutcome;
  /** Denied and not a shadow rule: answer 429. */
  readonly deny: boolean;
  /** A shadow rule would have denied: the request goes on, the denial is reported. */
  readonly shadowDenied: boolean;
  /** The store failed and the fallback buckets decided (FAIL_MODE=open). */
  readonly fellBack: boolean;
  readonly headers: { readonly 'ratelimit-policy': string; readonly ratelimit: string; readonly 'retry-after'?: string };
}

export interface LimitStepOptions {
  /** The current matcher; a function so a reload can swap it between requests. */
  readonly matcher: () => Matcher;
  readonly limiter: Limiter;
  /** Per-process buckets used when the store fails and FAIL_MODE is open. */
  readonly fallback: Limiter;
  readonly failMode: FailMode;
  readonly scheme: KeyScheme;
  readonly onStoreError?: (err: StoreError) => void;
}

/**
 * The limit step: match the request, take a token from every applicable
 * bucket (all or none), and say what to answer. Over the limit is a value;
 * a store failure is handled here, explicitly open or closed.
 */
export function limitStep({ matcher, limiter, fallback, failMode, scheme, onStoreError }: LimitStepOptions) {
  const keyOf = cachedBucketKeys(scheme);
  const policies = new WeakMap<Match, string>();
  const policyOf = (m: Match) => {
    let p = policies.get(m);
    if (p === undefined) policies.set(m, (p = policyHeader(m.limits)));
    return p;
  };

  return async function limit(request: MatchRequest): Promise<Verdict | null> {
    const match = matcher().match(request);
    if (match === null) return null;
    const { rule, limits } = match;
    const buckets = limits.map((l) => ({
      key: keyOf(rule.id, l.by, identityOf(request, l.by)),
      capacity: l.count,
      perSeconds: l.perSeconds,
    }));
    let outcome: LimitOutcome;
    let fellBack = false;
    try {
      outcome = await limiter.consume(buckets);
    } catch (err) {
      if (!(err instanceof StoreError)) throw err;
      onStoreError?.(err);
      if (failMode === 'closed') throw storeUnavailable();
      outcome = await fallback.consume(buckets);
      fellBack = true;
    }
    const denied = !outcome.allowed;
    const headers = {
      'ratelimit-policy': policyOf(match),
      ratelimit: rateLimitHeader(limits, outcome.buckets),
      ...(denied && !rule.shadow ? { 'retry-after': String(retryAfterSeconds(outcome.retryAfterMs)) } : {}),
    };
    return { match, outcome, deny: denied && !rule.shadow, shadowDenied: denied && rule.shadow, fellBack, headers };
  };
}
