import { readFileSync } from 'node:fs';
import type { Cluster, Redis } from 'ioredis';
import { keySlot } from './key-slot.ts';
import { StoreError, type Bucket, type BucketOutcome, type Limiter, type LimitOutcome } from './types.ts';
import { closeRedis } from '../redis-client.ts';

/**
 * Token buckets in Redis or Redis Cluster: the same GCRA as the memory
 * limiter, run by token-bucket.lua on Redis's clock.
 *
 * On a single Redis, calls are decided in batches, one script per batch:
 * each call is atomic (all its buckets or none), later calls of the batch see
 * what earlier ones took, and a burst of concurrent requests costs Redis one
 * script and the edge one command instead of one each. A batch is sent at
 * the end of the event-loop turn that opened it, or, while the previous batch
 * is still waiting for its reply, as soon as that reply arrives: under load,
 * batches grow with the request rate instead of one small script per turn
 * (group commit), and a quiet edge still sends each call at once.
 *
 * On Redis Cluster a script may only touch keys of one slot, so a call's
 * buckets are grouped by slot and each group runs its own atomic script, in
 * parallel (ioredis auto-pipelining batches them per node):
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

/**
 * The script as an ioredis command (EVALSHA, EVAL on NOSCRIPT, the client's keyPrefix applied): key count first, for a
 * batch.
 */
const COMMAND = 'gatewayTokenBucket';
/** Buckets per cluster script; a longer call is split like a cross-slot one. */
const MAX_KEYS_PER_SCRIPT = 16;
/** Cluster scripts are defined per key count (numberOfKeys fixed), so ioredis routes and pipelines by the first key. */
const SCRIPT_NAMES = Array.from({ length: MAX_KEYS_PER_SCRIPT + 1 }, (_, n) => `${COMMAND}${n}`);
/** Keys in one batch script at most (a script holds Redis for its whole run): a turn with more sends several. */
const MAX_BATCH_KEYS = 1024;

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

/** Calls waiting for their script, and the budget they share (it runs from the batch's first call). */
class Batch {
  /** Started with the batch: a call's budget includes its wait behind the batch in flight. */
  timer: NodeJS.Timeout | null = null;
  private settled = false;

  /** `ended`: called once, when the batch has its outcome (a reply, an error, or its budget passed). */
  constructor(private readonly ended: (batch: Batch) => void) {}

  readonly keys: string[] = [];
  /** Per call: its mode, its number of buckets, then each bucket's capacity and period (µs). */
  readonly argv: (string | number)[] = [];
  readonly sizes: number[] = [];
  readonly waiting: { resolve(outcome: LimitOutcome): void; reject(err: unknown): void }[] = [];

  add(buckets: readonly Bucket[], resolve: (outcome: LimitOutcome) => void, reject: (err: unknown) => void): void {
    addCall(this.keys, this.argv, 'take', buckets);
    this.sizes.push(buckets.length);
    this.waiting.push({ resolve, reject });
  }

  /** The script's arguments: key count, keys, then each call's arguments. */
  args(): (string | number)[] {
    return [this.keys.length, ...this.keys, ...this.argv];
  }

  /** Hands each call its outcome from the script's reply (a reply after the budget is dropped). */
  settle(reply: unknown): void {
    if (this.settled) return;
    let results: GroupResult[];
    try {
      results = readReply(reply, this.sizes);
    } catch (err) {
      return this.fail(err);
    }
    this.end();
    for (let i = 0; i < results.length; i++) this.waiting[i]!.resolve(outcomeOf(results[i]!));
  }

  fail(err: unknown): void {
    if (!this.end()) return;
    const error = storeError(err);
    for (const w of this.waiting) w.reject(error);
  }

  /** False when the batch was already settled or failed. */
  private end(): boolean {
    if (this.settled) return false;
    this.settled = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.ended(this);
    return true;
  }
}

export class RedisLimiter implements Limiter {
  private readonly cluster: boolean;
  private readonly keyPrefix: string;
  private readonly timeoutMs: number;
  private readonly ownsClient: boolean;
  /** Single Redis: the calls not sent yet, sent together as one script. */
  private batch: Batch | null = null;
  /** Single Redis: the batch sent whose reply has not arrived (nor its budget passed). */
  private flying: Batch | null = null;
  private readonly sendBatch = () => {
    if (this.flying === null) this.send();
  };
  /** A batch has its outcome: the one in flight lets the next go. */
  private readonly ended = (batch: Batch) => {
    if (this.flying !== batch) return;
    this.flying = null;
    if (this.batch !== null) this.send();
  };

  /**
   * The caller owns connection settings. A Cluster client must be built with
   * `enableAutoPipelining: true`: concurrent calls then share one write per
   * node instead of one round trip each (on a single Redis the limiter
   * batches by itself).
   */
  constructor(
    private readonly client: Redis | Cluster,
    { timeoutMs = 500, ownsClient = true }: RedisLimiterOptions = {},
  ) {
    this.cluster = client.isCluster;
    if (this.cluster && !client.options.enableAutoPipelining) {
      throw new TypeError('RedisLimiter on a Cluster needs an ioredis client built with enableAutoPipelining: true');
    }
    this.keyPrefix = (client.options as { keyPrefix?: string }).keyPrefix ?? '';
    this.timeoutMs = timeoutMs;
    this.ownsClient = ownsClient;
    // Defined up front: an ioredis pipeline copies the defined scripts when it is created.
    if (this.cluster)
      for (let n = 1; n <= MAX_KEYS_PER_SCRIPT; n++)
        client.defineCommand(SCRIPT_NAMES[n]!, { numberOfKeys: n, lua: LUA });
    else client.defineCommand(COMMAND, { lua: LUA });
  }

  consume(buckets: readonly Bucket[]): Promise<LimitOutcome> {
    if (buckets.length === 0) return Promise.resolve({ allowed: true, buckets: [], retryAfterMs: 0 });
    if (this.cluster) return this.withinBudget(this.decide(buckets));
    return new Promise((resolve, reject) => {
      let batch = this.batch;
      if (batch === null) batch = this.open();
      batch.add(buckets, resolve, reject);
      if (batch.keys.length >= MAX_BATCH_KEYS) this.send();
    });
  }

  /** A new pending batch, its budget running; sent after this turn's poll phase, or when the reply in flight lands. */
  private open(): Batch {
    const batch = (this.batch = new Batch(this.ended));
    // Judged after the I/O already waiting has been read (setImmediate runs after this loop turn's poll phase):
    // when the edge's own event loop was blocked past the budget, a reply that arrived in time is taken instead of
    // being counted as a store failure.
    batch.timer = setTimeout(
      () =>
        setImmediate(() => {
          if (this.batch === batch) this.batch = null;
          batch.fail(new StoreError(`redis: no answer within ${this.timeoutMs} ms`));
        }),
      this.timeoutMs,
    );
    setImmediate(this.sendBatch);
    return batch;
  }

  async close(): Promise<void> {
    if (this.ownsClient) await closeRedis(this.client);
  }

  /**
   * Sends the pending batch as one script (written at once unless the client auto-pipelines). The next batch goes
   * when this one's reply arrives, or when its budget has passed (a store that stopped answering holds no call past
   * its own budget).
   */
  private send(): void {
    const batch = this.batch;
    if (batch === null) return;
    this.batch = null;
    this.flying = batch;
    const script = (this.client as unknown as Record<string, ScriptCall>)[COMMAND]!;
    script.apply(this.client, batch.args()).then(
      (reply) => batch.settle(reply),
      (err: unknown) => batch.fail(err),
    );
  }

  /** `work`, or a StoreError once the budget has passed, whichever comes first; other errors become StoreErrors. */
  private withinBudget<T>(work: Promise<T>): Promise<T> {
    return new Promise((resolve, reject) => {
      // Judged after the I/O already waiting has been read (setImmediate runs after this loop turn's poll
      // phase): when the edge's own event loop was blocked past the budget, a reply that arrived in time
      // is taken instead of being counted as a store failure.
      const timer = setTimeout(
        () => setImmediate(() => reject(new StoreError(`redis: no answer within ${this.timeoutMs} ms`))),
        this.timeoutMs,
      );
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

  /** Cluster: the call's buckets by slot, one script per group, refunds when a group denied. */
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
  private async run(mode: Mode, buckets: readonly Bucket[], group: number[]): Promise<GroupResult> {
    const chosen = group.map((i) => buckets[i]!);
    const keys: string[] = [];
    const argv: (string | number)[] = [];
    addCall(keys, argv, mode, chosen);
    const script = (this.client as unknown as Record<string, ScriptCall>)[SCRIPT_NAMES[chosen.length]!]!;
    return readReply(await script.apply(this.client, [...keys, ...argv]), [chosen.length])[0]!;
  }
}

/** Appends one call to the script's keys and arguments (see token-bucket.lua). */
function addCall(keys: string[], argv: (string | number)[], mode: Mode, buckets: readonly Bucket[]): void {
  argv.push(mode, buckets.length);
  for (const b of buckets) {
    keys.push(b.key);
    argv.push(b.capacity, Math.round(b.perSeconds * 1e6));
  }
}

function storeError(err: unknown): StoreError {
  return err instanceof StoreError
    ? err
    : new StoreError(`redis: ${(err as Error)?.message ?? String(err)}`, { cause: err });
}

/** The script's flat reply, cut into one result per call (`sizes`: each call's bucket count). */
function readReply(reply: unknown, sizes: readonly number[]): GroupResult[] {
  const expected = sizes.reduce((sum, n) => sum + 1 + 3 * n, 0);
  if (!Array.isArray(reply) || reply.length !== expected)
    throw new StoreError(`redis: unexpected script reply (${Array.isArray(reply) ? reply.length : typeof reply})`);
  const results: GroupResult[] = [];
  let at = 0;
  for (const n of sizes) {
    const allowed = reply[at++] === 1;
    const buckets: BucketOutcome[] = [];
    for (let j = 0; j < n; j++, at += 3)
      buckets.push({
        remaining: Number(reply[at]),
        msToNextToken: Number(reply[at + 1]),
        msToToken: Number(reply[at + 2]),
      });
    results.push({ allowed, buckets });
  }
  return results;
}

function outcomeOf({ allowed, buckets }: GroupResult): LimitOutcome {
  let retryAfterMs = 0;
  if (!allowed) for (const b of buckets) retryAfterMs = Math.max(retryAfterMs, b.msToToken);
  return { allowed, buckets, retryAfterMs };
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
