import type { Cluster } from 'ioredis';
import { keySlot } from './key-slot.ts';
import { afterBudget, noAnswerWithin, storeError } from './store-budget.ts';
import {
  addCall,
  defineFixedKeyScripts,
  MAX_KEYS_PER_SCRIPT,
  readReply,
  runFixedKeyScript,
  type LeaseArgs,
  type Mode,
  type ScriptResult,
} from './token-bucket-script.ts';
import type { Bucket, BucketOutcome, LimitOutcome } from './types.ts';

/**
 * Token buckets on Redis Cluster. A script may only touch keys of one slot,
 * so a call's buckets are grouped by slot and each group runs its own atomic
 * script, in parallel (ioredis auto-pipelining batches them per node):
 *
 * - A call is allowed only if every group allowed it, and no bucket ever
 *   gives more tokens than it holds (each take is checked atomically where
 *   the bucket lives).
 * - When one group denies and another allowed, the call is denied and the
 *   tokens the allowing groups took are given back by a 'refund' script (one
 *   more round trip, only on that path), so in the end a denied call has
 *   taken no token. Between the take and the refund, concurrent calls on
 *   those buckets see one token fewer: near a limit, that can deny a call
 *   that would otherwise have passed (never the reverse). If the refund
 *   itself fails, those tokens stay taken and come back by refill.
 *
 * Why take-then-refund rather than a check-only pass before the take: the
 * common case (allowed) then costs one round trip instead of two, and a
 * check pass would still need the refund to close its own race.
 */
export class RedisClusterLimiter {
  private readonly keyPrefix: string;

  /**
   * The client must be built with `enableAutoPipelining: true`: concurrent calls then share one write per node
   * instead of one round trip each.
   */
  constructor(
    private readonly client: Cluster,
    private readonly timeoutMs: number,
  ) {
    if (!client.options.enableAutoPipelining) {
      throw new TypeError('RedisLimiter on a Cluster needs an ioredis client built with enableAutoPipelining: true');
    }
    this.keyPrefix = (client.options as { keyPrefix?: string }).keyPrefix ?? '';
    defineFixedKeyScripts(client);
  }

  /** `buckets` is not empty. */
  consume(buckets: readonly Bucket[]): Promise<LimitOutcome> {
    return this.withinBudget(this.decide(buckets, undefined));
  }

  /** One call in `mode` under `lease`: a take is decided as `consume`; a refund or renewal runs in every group. */
  call(mode: Mode, buckets: readonly Bucket[], lease: LeaseArgs | undefined): Promise<LimitOutcome> {
    if (mode === 'take') return this.withinBudget(this.decide(buckets, lease));
    const groups = this.group(buckets);
    return this.withinBudget(
      Promise.all(groups.map((g) => this.run(mode, buckets, g, lease))).then((r) => combine(buckets.length, groups, r)),
    );
  }

  /** `work`, or a StoreError once the budget has passed, whichever comes first; other errors become StoreErrors. */
  private withinBudget<T>(work: Promise<T>): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = afterBudget(this.timeoutMs, () => reject(noAnswerWithin(this.timeoutMs)));
      work.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (err: unknown) => {
          clearTimeout(timer);
          reject(storeError(err));
        },
      );
    });
  }

  /** The call's buckets by slot, one script per group, refunds when a group denied. */
  private async decide(buckets: readonly Bucket[], lease: LeaseArgs | undefined): Promise<LimitOutcome> {
    const groups = this.group(buckets);
    if (groups.length === 1)
      return combine(buckets.length, groups, [await this.run('take', buckets, groups[0]!, lease)]);

    const takes = await Promise.allSettled(groups.map((g) => this.run('take', buckets, g, lease)));
    const results = takes.map((t) => (t.status === 'fulfilled' ? t.value : undefined));
    const failed = takes.find((t): t is PromiseRejectedResult => t.status === 'rejected');
    const denied = results.some((r) => r !== undefined && !r.allowed);
    if (!failed && !denied) return combine(buckets.length, groups, results as ScriptResult[]);

    // Denied (or failed) somewhere: give back what the other groups took.
    const refunds = await Promise.allSettled(
      groups.map((g, i) => (results[i]?.allowed ? this.run('refund', buckets, g, lease) : Promise.resolve(results[i]))),
    );
    if (failed) throw failed.reason;
    const settled = refunds.map((r, i) => (r.status === 'fulfilled' && r.value ? r.value : results[i]!));
    return combine(
      buckets.length,
      groups,
      settled.map((r) => ({ ...r, allowed: false })),
    );
  }

  /** Indices of the call's buckets, grouped by slot so each group can run as one script. */
  private group(buckets: readonly Bucket[]): number[][] {
    const bySlot = new Map<number, number[]>();
    buckets.forEach((b, i) => {
      const slot = keySlot(this.keyPrefix + b.key);
      const group = bySlot.get(slot);
      if (group) group.push(i);
      else bySlot.set(slot, [i]);
    });
    return [...bySlot.values()].flatMap(chunk);
  }

  /** Runs the script, as a batch of this one call, on the buckets at `group`'s indices. */
  private async run(
    mode: Mode,
    buckets: readonly Bucket[],
    group: number[],
    lease: LeaseArgs | undefined,
  ): Promise<ScriptResult> {
    const chosen = group.map((i) => buckets[i]!);
    const keys: string[] = [];
    const argv: (string | number)[] = [];
    addCall(keys, argv, mode, chosen, lease);
    return readReply(await runFixedKeyScript(this.client, keys, argv), [chosen.length])[0]!;
  }
}

function chunk(indices: number[]): number[][] {
  const out: number[][] = [];
  for (let i = 0; i < indices.length; i += MAX_KEYS_PER_SCRIPT) out.push(indices.slice(i, i + MAX_KEYS_PER_SCRIPT));
  return out;
}

/** The call's outcome from its groups' results, buckets back in the caller's order. */
function combine(n: number, groups: number[][], results: ScriptResult[]): LimitOutcome {
  const buckets = new Array<BucketOutcome>(n);
  let allowed = true;
  results.forEach((r, g) => {
    allowed &&= r.allowed;
    groups[g]!.forEach((i, j) => (buckets[i] = r.buckets[j]!));
  });
  const retryAfterMs = allowed ? 0 : Math.max(0, ...buckets.map((b) => b.msToToken));
  return { allowed, buckets, retryAfterMs };
}
