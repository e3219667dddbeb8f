import { readFileSync } from 'node:fs';
import type { Cluster, Redis } from 'ioredis';
import { keySlot } from './key-slot.ts';
import { StoreError, type Bucket, type BucketOutcome, type Limiter, type LimitOutcome } from './types.ts';

/**
 * Token buckets in Redis or Redis Cluster: the same GCRA as the memory
 * limiter, run by token-bucket.lua on Redis's clock, one script per call.
 *
 * On a single Redis a call is one atomic script, one round trip. On Redis
 * Cluster a script may only touch keys of one slot, so a call's buckets are
 * grouped by slot and each group runs its own atomic script, in parallel:
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

const LUA = readFileSync(new URL('./token-bucket.lua', import.meta.url), 'utf8');

/** Scripts are defined per key count (numberOfKeys fixed), so ioredis routes and pipelines by the first key. */
const COMMAND = 'gatewayTokenBucket';
/** Buckets per script; a longer call is split like a cross-slot one. */
const MAX_KEYS_PER_SCRIPT = 16;
const SCRIPT_NAMES = Array.from({ length: MAX_KEYS_PER_SCRIPT + 1 }, (_, n) => `${COMMAND}${n}`);

type Mode = 'take' | 'refund';
type ScriptCall = (...args: (string | number)[]) => Promise<unknown>;

export interface RedisLimiterOptions {
  /** Budget of one `consume`, in ms: a slower store is a StoreError (the request is not held up). */
  readonly timeoutMs?: number;
  /** Whether `close()` quits the client. Off when the client is shared. */
  readonly ownsClient?: boolean;
}

interface GroupResult {
  readonly allowed: boolean;
  readonly buckets: BucketOutcome[];
}

export class RedisLimiter implements Limiter {
  private readonly cluster: boolean;
  private readonly keyPrefix: string;
  private readonly timeoutMs: number;
  private readonly ownsClient: boolean;

  /**
   * The caller owns connection settings, but the client must be built with
   * `enableAutoPipelining: true`: concurrent calls then share one write on
   * the wire (per node) instead of one round trip each.
   */
  constructor(
    private readonly client: Redis | Cluster,
    { timeoutMs = 500, ownsClient = true }: RedisLimiterOptions = {},
  ) {
    if (!client.options.enableAutoPipelining) throw new TypeError('RedisLimiter needs an ioredis client built with enableAutoPipelining: true');
    this.cluster = client.isCluster;
    this.keyPrefix = (client.options as { keyPrefix?: string }).keyPrefix ?? '';
    this.timeoutMs = timeoutMs;
    this.ownsClient = ownsClient;
    // Defined up front: an ioredis pipeline copies the defined scripts when it is created.
    for (let n = 1; n <= MAX_KEYS_PER_SCRIPT; n++) client.defineCommand(SCRIPT_NAMES[n]!, { numberOfKeys: n, lua: LUA });
  }

  consume(buckets: readonly Bucket[]): Promise<LimitOutcome> {
    if (buckets.length === 0) return Promise.resolve({ allowed: true, buckets: [], retryAfterMs: 0 });
    return new Promise((resolve, reject) => {
      // Judged after the I/O already waiting has been read (setImmediate runs after this loop turn's poll
      // phase): when the edge's own event loop was blocked past the budget, a reply that arrived in time
      // is taken instead of being counted as a store failure.
      const timer = setTimeout(() => setImmediate(() => reject(new StoreError(`redis: no answer within ${this.timeoutMs} ms`))), this.timeoutMs);
      const decided = this.cluster || buckets.length > MAX_KEYS_PER_SCRIPT ? this.decide(buckets) : this.take(buckets);
      decided.then(
        (outcome) => {
          clearTimeout(timer);
          resolve(outcome);
        },
        (err: unknown) => {
          clearTimeout(timer);
          reject(err instanceof StoreError ? err : new StoreError(`redis: ${(err as Error)?.message ?? String(err)}`, { cause: err }));
        },
      );
    });
  }

  async close(): Promise<void> {
    if (!this.ownsClient) return;
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect(); // already closed or unreachable: nothing left to flush
    }
  }

  /** One script for all the buckets (a single Redis, at most MAX_KEYS_PER_SCRIPT buckets): the common case. */
  private async take(buckets: readonly Bucket[]): Promise<LimitOutcome> {
    const { allowed, buckets: outcomes } = await this.run('take', buckets, null);
    let retryAfterMs = 0;
    if (!allowed) for (const b of outcomes) retryAfterMs = Math.max(retryAfterMs, b.msToToken);
    return { allowed, buckets: outcomes, retryAfterMs };
  }

  private async decide(buckets: readonly Bucket[]): Promise<LimitOutcome> {
    const groups = this.group(buckets);
    if (groups.length === 1) return combine(buckets.length, groups, [await this.run('take', buckets, groups[0]!)]);

    const takes = await Promise.allSettled(groups.map((g) => this.run('take', buckets, g)));
    const results = takes.map((t) => (t.status === 'fulfilled' ? t.value : undefined));
    const failed = takes.find((t): t is PromiseRejectedResult => t.status === 'rejected');
    const denied = results.some((r) => r !== undefined && !r.allowed);
    if (!failed && !denied) return combine(buckets.length, groups, results as GroupResult[]);

    // Denied (or failed) somewhere: give back what the other groups took.
    const refunds = await Promise.allSettled(
      groups.map((g, i) => (results[i]?.allowed ? this.run('refund', buckets, g) : Promise.resolve(results[i]))),
    );
    if (failed) throw failed.reason;
    const settled = refunds.map((r, i) => (r.status === 'fulfilled' && r.value ? r.value : results[i]!));
    return combine(buckets.length, groups, settled.map((r) => ({ ...r, allowed: false })));
  }

  /** Indices of the call's buckets, grouped so each group can run as one script. */
  private group(buckets: readonly Bucket[]): number[][] {
    const all = buckets.map((_, i) => i);
    if (!this.cluster) return chunk(all);
    const bySlot = new Map<number, number[]>();
    for (const i of all) {
      const slot = keySlot(this.keyPrefix + buckets[i]!.key);
      const group = bySlot.get(slot);
      if (group) group.push(i);
      else bySlot.set(slot, [i]);
    }
    return [...bySlot.values()].flatMap(chunk);
  }

  /** Runs the script on the buckets at `group`'s indices, or on all of them when `group` is null. */
  private async run(mode: Mode, buckets: readonly Bucket[], group: number[] | null): Promise<GroupResult> {
    const chosen = group === null ? buckets : group.map((i) => buckets[i]!);
    const n = chosen.length;
    const args: (string | number)[] = [];
    for (const b of chosen) args.push(b.key);
    args.push(mode);
    for (const b of chosen) args.push(b.capacity, Math.round(b.perSeconds * 1e6));
    const script = (this.client as unknown as Record<string, ScriptCall>)[SCRIPT_NAMES[n]!]!;
    const reply = await script.apply(this.client, args);
    if (!Array.isArray(reply) || reply.length !== 1 + 3 * n) throw new StoreError(`redis: unexpected script reply ${JSON.stringify(reply)}`);
    const out: BucketOutcome[] = [];
    for (let j = 0; j < n; j++) {
      out.push({ remaining: Number(reply[1 + 3 * j]), msToNextToken: Number(reply[2 + 3 * j]), msToToken: Number(reply[3 + 3 * j]) });
    }
    return { allowed: reply[0] === 1, buckets: out };
  }
}

function chunk(indices: number[]): number[][] {
  const out: number[][] = [];
  for (let i = 0; i < indices.length; i += MAX_KEYS_PER_SCRIPT) out.push(indices.slice(i, i + MAX_KEYS_PER_SCRIPT));
  return out;
}

/** The call's outcome from its groups' results, buckets back in the caller's order. */
function combine(n: number, groups: number[][], results: GroupResult[]): LimitOutcome {
  const buckets = new Array<BucketOutcome>(n);
  let allowed = true;
  results.forEach((r, g) => {
    allowed &&= r.allowed;
    groups[g]!.forEach((i, j) => (buckets[i] = r.buckets[j]!));
  });
  const retryAfterMs = allowed ? 0 : Math.max(0, ...buckets.map((b) => b.msToToken));
  return { allowed, buckets, retryAfterMs };
}
