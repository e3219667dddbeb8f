import { TatTable } from './tat-table.ts';
import {
  SLOT_RETRY_MS,
  type Bucket,
  type BucketAdmin,
  type BucketState,
  type BucketOutcome,
  type Lease,
  type Limiter,
  type LimitOutcome,
} from './types.ts';

/**
 * In-process token buckets: the embedded default store and the fail-open
 * fallback when Redis is down.
 *
 * GCRA: a bucket is one number, its theoretical arrival time (TAT): the
 * instant at which it will be full again. With interval = period / capacity
 * (the time one token takes to refill), a bucket holds
 * `(period - (TAT - now)) / interval` tokens (capacity when TAT <= now), and
 * taking a token moves TAT forward by one interval. The Lua script of the
 * Redis limiter does the same arithmetic in microseconds.
 *
 * Memory is bounded by `maxKeys`. Measured on Node 20 (x64) with keys of the
 * production shape (`rl:us:runs-query:api-key:<22-char digest>`, 47 chars):
 * ~105 heap bytes per entry when filled once, ~135 after a million distinct
 * keys churned through (the Map's table keeps deleted slots until it
 * rehashes), plus 16 bytes of typed arrays: under 150 bytes per entry, so the
 * default 500,000 keys stay under ~75 MB. To stay under the bound:
 * - a full bucket (TAT <= now) holds no information, so it is dropped: each
 *   insert of a new key first checks the two least recently used entries and
 *   drops them if full (a lazy sweep in O(1) steps);
 * - when the map is still at `maxKeys`, the least recently used entry is
 *   evicted (preferring a full one among the oldest few). Evicting a bucket
 *   that is not full forgets what its identity has spent: that identity gets
 *   a fresh, full bucket next time. It takes `maxKeys` other identities
 *   touched since it was last seen, so size `maxKeys` above the number of
 *   identities active within your longest `per`.
 */

export interface MemoryLimiterOptions {
  /** Most buckets kept at once (see above for the memory this bounds). */
  readonly maxKeys?: number;
  /** Milliseconds on a monotonic clock; injected by tests so they never sleep. */
  readonly now?: () => number;
}

export const DEFAULT_MAX_KEYS = 500_000;

/** Token-count slack for float rounding: 2.9999999 tokens are 3 tokens. */
export const TOKEN_EPSILON = 1e-6;

const monotonicNow = (): number => performance.timeOrigin + performance.now();

export class MemoryLimiter implements Limiter, BucketAdmin {
  readonly maxKeys: number;
  private readonly now: () => number;
  private readonly tats: TatTable;
  /** In-flight buckets: key -> slots held. Only keys with a slot held are kept (bounded by the leases alive). */
  private readonly slots = new Map<string, number>();
  /** In-flight keys an operator reset, and how many times (a few keys: kept). */
  private readonly resets = new Map<string, number>();

  constructor({ maxKeys = DEFAULT_MAX_KEYS, now = monotonicNow }: MemoryLimiterOptions = {}) {
    if (!Number.isInteger(maxKeys) || maxKeys < 1)
      throw new TypeError(`maxKeys must be a positive integer, got ${maxKeys}`);
    this.maxKeys = maxKeys;
    this.now = now;
    this.tats = new TatTable(maxKeys);
  }

  /** Number of buckets held (for metrics and tests). */
  get size(): number {
    return this.tats.size;
  }

  async consume(buckets: readonly Bucket[]): Promise<LimitOutcome> {
    return this.consumeSync(buckets);
  }

  /** The same as `consume`, without a promise: the memory store never waits. */
  consumeSync(buckets: readonly Bucket[]): LimitOutcome {
    const now = this.now();
    const n = buckets.length;
    // Every bucket is decided before any is written. `after[i]` is the TAT of bucket i's
    // key once the call's tokens up to i are taken, so a key named twice is charged twice
    // (for an in-flight bucket: the slots held once the call's slots up to i are taken).
    const after = new Array<number>(n);
    let allowed = true;
    let slots = false;
    for (let i = 0; i < n; i++) {
      const b = buckets[i]!;
      if (b.inFlight) {
        slots = true;
        after[i] = this.heldBefore(buckets, after, i) + 1;
        if (after[i]! > b.capacity) allowed = false;
        continue;
      }
      const cur = this.current(buckets, after, i, now);
      const interval = intervalMs(b);
      if (tokensAt(b, interval, cur, now) < 1 - TOKEN_EPSILON) allowed = false;
      after[i] = cur + interval;
    }

    const out = new Array<BucketOutcome>(n);
    if (allowed) {
      for (let i = 0; i < n; i++)
        if (buckets[i]!.inFlight) this.slots.set(buckets[i]!.key, after[i]!);
        else this.tats.set(buckets[i]!.key, after[i]!, now);
      // Report each bucket as the call leaves it (after the last token of a key named twice).
      for (let i = 0; i < n; i++) {
        let last = i;
        for (let j = i + 1; j < n; j++) if (buckets[j]!.key === buckets[i]!.key) last = j;
        out[i] = buckets[i]!.inFlight
          ? slotOutcome(buckets[i]!, after[last]!)
          : outcome(buckets[i]!, after[last]!, now);
      }
      if (!slots) return { allowed, buckets: out, retryAfterMs: 0 };
      return { allowed, buckets: out, retryAfterMs: 0, lease: this.lease(buckets.filter((b) => b.inFlight)) };
    }
    let retryAfterMs = 0;
    for (let i = 0; i < n; i++) {
      const b = buckets[i]!;
      if (b.inFlight) {
        const o = slotOutcome(b, this.slots.get(b.key) ?? 0);
        if (o.msToToken > retryAfterMs) retryAfterMs = o.msToToken;
        out[i] = o;
        continue;
      }
      const stored = this.tats.get(b.key);
      if (stored !== undefined) this.tats.touch(b.key); // a denied identity is active: keep its bucket from eviction
      const o = outcome(b, stored === undefined ? now : Math.max(stored, now), now);
      if (o.msToToken > retryAfterMs) retryAfterMs = o.msToToken;
      out[i] = o;
    }
    return { allowed, buckets: out, retryAfterMs };
  }

  async peek(b: Bucket): Promise<BucketState> {
    if (b.inFlight) {
      const held = this.slots.get(b.key) ?? 0;
      return { remaining: Math.max(0, b.capacity - held), held };
    }
    const now = this.now();
    const stored = this.tats.get(b.key);
    return { remaining: outcome(b, stored === undefined ? now : Math.max(stored, now), now).remaining };
  }

  async reset(b: Bucket): Promise<void> {
    if (!b.inFlight) return this.tats.delete(b.key);
    this.slots.delete(b.key);
    this.resets.set(b.key, (this.resets.get(b.key) ?? 0) + 1);
  }

  /** Slots held in the in-flight bucket `key` (for tests and the admin's reads). */
  slotsHeld(key: string): number {
    return this.slots.get(key) ?? 0;
  }

  async close(): Promise<void> {
    this.tats.clear();
    this.slots.clear();
  }

  /** Slots of bucket i's key before its own: after earlier slots of this call, else held. */
  private heldBefore(buckets: readonly Bucket[], after: number[], i: number): number {
    const key = buckets[i]!.key;
    for (let j = i - 1; j >= 0; j--) if (buckets[j]!.key === key) return after[j]!;
    return this.slots.get(key) ?? 0;
  }

  /** Gives back one slot of each bucket once (a process's own slots: nothing to renew, nothing to expire). */
  private lease(taken: readonly Bucket[]): Lease {
    let released = false;
    // A key an operator resets meanwhile no longer holds this lease's slot: its release must not free another's.
    const resets = this.resets.size === 0 ? null : taken.map((b) => this.resets.get(b.key));
    return {
      release: async () => {
        if (released) return;
        released = true;
        for (const [i, b] of taken.entries()) {
          if ((resets?.[i] ?? undefined) !== this.resets.get(b.key)) continue;
          const held = (this.slots.get(b.key) ?? 0) - 1;
          if (held > 0) this.slots.set(b.key, held);
          else this.slots.delete(b.key);
        }
      },
    };
  }

  /** TAT of bucket i's key before its own token: after earlier tokens of this call, else stored. */
  private current(buckets: readonly Bucket[], after: number[], i: number, now: number): number {
    const key = buckets[i]!.key;
    for (let j = i - 1; j >= 0; j--) if (buckets[j]!.key === key) return after[j]!;
    const stored = this.tats.get(key);
    return stored === undefined || stored < now ? now : stored;
  }
}

export function intervalMs(b: Bucket): number {
  return (b.perSeconds * 1000) / b.capacity;
}

/** Tokens held at `now` by a bucket whose TAT is `tat` (>= now). */
function tokensAt(b: Bucket, interval: number, tat: number, now: number): number {
  return b.capacity - (tat - now) / interval;
}

/** What a bucket whose TAT is `tat` (>= now) reports. Same rounding as the Lua script. */
export function outcome(b: Bucket, tat: number, now: number): BucketOutcome {
  const interval = intervalMs(b);
  const tokens = tokensAt(b, interval, tat, now);
  const remaining = Math.max(0, Math.min(b.capacity, Math.floor(tokens + TOKEN_EPSILON)));
  return {
    remaining,
    msToNextToken: remaining >= b.capacity ? 0 : ceilMs((remaining + 1 - tokens) * interval),
    msToToken: remaining >= 1 ? 0 : ceilMs((1 - tokens) * interval),
  };
}

/** What an in-flight bucket holding `held` slots reports: free slots; a full one says to try again soon. */
export function slotOutcome(b: Bucket, held: number): BucketOutcome {
  const remaining = Math.max(0, b.capacity - held);
  const wait = remaining >= 1 ? 0 : SLOT_RETRY_MS;
  return { remaining, msToNextToken: wait, msToToken: wait };
}

/** Rounds a duration up to whole ms, ignoring float dust (5.0000000001 ms is 5 ms). */
function ceilMs(ms: number): number {
  return Math.max(0, Math.ceil(ms - 1e-6));
}
