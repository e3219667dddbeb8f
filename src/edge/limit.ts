import { cachedBucketKeys, type KeyScheme } from '../limiter/bucket-key.ts';
import { StoreError, type Bucket, type Lease, type Limiter, type LimitOutcome } from '../limiter/types.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { Match, Matcher, MatchRequest } from '../rules/compile.ts';
import type { OrgPlans } from './org-plans.ts';
import type { Limit } from '../rules/types.ts';
import { policyHeader, rateLimitHeader, retryAfterSeconds } from './ratelimit-headers.ts';
import { countedIdentity } from './tenant-scope.ts';

export type FailMode = 'open' | 'closed';
export type Decision = 'allowed' | 'denied' | 'shadow-denied' | 'store-down';

/** A request as the limit step counts it: `tenant`, the deployment it is for ('' or absent: the gateway's own). */
export interface LimitRequest extends MatchRequest {
  readonly tenant?: string;
}

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
  /**
   * Allowed and in-flight limits applied: the slots taken, which the caller gives back when the response ends (or,
   * `until: run`, when the run it started ends; see slot-hold.ts). A WebSocket gives them back when it closes.
   */
  readonly lease?: Lease | undefined;
  /** Some in-flight limit applied is held `until: run`. */
  readonly untilRun?: boolean;
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
  /** Plans per organisation (org-plans.ts): the decision with the request's organisation's overrides applied. */
  readonly plans?: OrgPlans;
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
  const shapes = new WeakMap<Match, MatchShape>();
  const shapeOf = (m: Match) => {
    let p = shapes.get(m);
    if (p === undefined) shapes.set(m, (p = matchShape(m)));
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

  return async function limit(request: LimitRequest): Promise<Verdict | null> {
    let match = matcher().match(request);
    if (match === null) return null;
    if (options.plans !== undefined) {
      const planned = options.plans(match, request);
      match = planned instanceof Promise ? await planned : planned; // awaited only on a registry lookup
    }
    const { rule, limits } = match;
    const shape = shapeOf(match);
    const buckets = limits.map((l) => ({
      key: keyOf(l.scope, l.by, countedIdentity(request, l)),
      capacity: l.count,
      perSeconds: l.perSeconds,
      inFlight: l.until !== null,
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
      'ratelimit-policy': shape.policy,
      ratelimit: rateLimitHeader(limits, outcome.buckets),
    };
    if (outcome.allowed) {
      // One shape for every allowed verdict, lease or not (the handler reads them all).
      const lease = outcome.lease === undefined ? undefined : counted(outcome.lease, shape.slots, metrics);
      const category = limits[0]!.category;
      return { match, decision: 'allowed', fellBack, category, guard: null, headers, lease, untilRun: shape.untilRun };
    }
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

/** What the limit step keeps per decision: its policy header, its in-flight policies, whether one holds until a run ends. */
interface MatchShape {
  readonly policy: string;
  readonly slots: readonly string[];
  readonly untilRun: boolean;
}

function matchShape(m: Match): MatchShape {
  const inFlight = m.limits.filter((l) => l.until !== null);
  return {
    policy: policyHeader(m.limits),
    slots: inFlight.map((l) => l.policy),
    untilRun: inFlight.some((l) => l.until === 'run'),
  };
}

/** `lease`, counted in the slots-in-use gauge (by policy) from now until released. */
function counted(lease: Lease, policies: readonly string[], metrics: Metrics | undefined): Lease {
  if (metrics === undefined) return lease;
  for (const policy of policies) metrics.slotsInUse.inc({ policy });
  let released = false;
  return {
    release: () => {
      if (!released) {
        released = true;
        for (const policy of policies) metrics.slotsInUse.dec({ policy });
      }
      return lease.release();
    },
  };
}

/** The id of the first guard whose bucket ran out, or null. */
function emptyGuard(limits: readonly Limit[], outcome: LimitOutcome): string | null {
  for (let i = 0; i < limits.length; i++)
    if (limits[i]!.guard !== null && outcome.buckets[i]!.msToToken > 0) return limits[i]!.guard;
  return null;
}
