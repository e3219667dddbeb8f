import type { Cluster, Redis } from 'ioredis';
import { closeRedis } from '../redis-client.ts';
import { RedisBatchLimiter } from './redis-batch-limiter.ts';
import { RedisClusterLimiter } from './redis-cluster-limiter.ts';
import { DEFAULT_LEASE_MS, SlotLeases } from './slot-leases.ts';
import { outcome } from './memory-limiter.ts';
import type { Bucket, BucketAdmin, BucketState, Limiter, LimitOutcome } from './types.ts';

/**
 * Token buckets in Redis or Redis Cluster: the same GCRA as the memory
 * limiter, run by token-bucket.lua on Redis's clock. A single Redis decides
 * calls in batches (redis-batch-limiter.ts); a Cluster runs one script per
 * slot and refunds a call that one slot denied (redis-cluster-limiter.ts).
 * What they share: token-bucket-script.ts (the script, its keys, arguments
 * and reply) and store-budget.ts (each call's time budget).
 */

export interface RedisLimiterOptions {
  /** Budget of one `consume`, in ms: a slower store is a StoreError (the request is not held up). */
  readonly timeoutMs?: number;
  /** Whether `close()` quits the client. Off when the client is shared. */
  readonly ownsClient?: boolean;
  /** How long an in-flight slot outlives the last renewal of its lease (slot-leases.ts), in ms. */
  readonly leaseMs?: number;
}

export class RedisLimiter implements Limiter, BucketAdmin {
  private readonly path: RedisBatchLimiter | RedisClusterLimiter;
  private readonly ownsClient: boolean;
  private readonly leases: SlotLeases;

  /**
   * The caller owns connection settings. A Cluster client must be built with
   * `enableAutoPipelining: true`: concurrent calls then share one write per
   * node instead of one round trip each (on a single Redis the limiter
   * batches by itself).
   */
  constructor(
    private readonly client: Redis | Cluster,
    { timeoutMs = 500, ownsClient = true, leaseMs = DEFAULT_LEASE_MS }: RedisLimiterOptions = {},
  ) {
    const path = client.isCluster
      ? new RedisClusterLimiter(client as Cluster, timeoutMs)
      : new RedisBatchLimiter(client as Redis, timeoutMs);
    this.path = path;
    this.ownsClient = ownsClient;
    this.leases = new SlotLeases((mode, buckets, lease) => path.call(mode, buckets, lease), leaseMs);
  }

  /** Leases of in-flight slots this limiter holds (and renews) now. */
  get leasesHeld(): number {
    return this.leases.size;
  }

  consume(buckets: readonly Bucket[]): Promise<LimitOutcome> {
    if (buckets.length === 0) return Promise.resolve({ allowed: true, buckets: [], retryAfterMs: 0 });
    if (!buckets.some((b) => b.inFlight)) return this.path.consume(buckets);
    // In flight: the slots ride the same script (and round trip) as the token buckets, under a lease of their own.
    const lease = this.leases.args();
    return this.path.call('take', buckets, lease).then((outcome) => this.leases.hold(outcome, lease, buckets));
  }

  /** On Redis's clock: a rate bucket's TAT (GET), an in-flight bucket's unexpired leases (ZCOUNT); nothing written. */
  async peek(b: Bucket): Promise<BucketState> {
    const [seconds, micros] = await this.client.time();
    const now = Number(seconds) * 1e6 + Number(micros);
    if (b.inFlight) {
      const held = await this.client.zcount(b.key, `(${now}`, '+inf');
      return { remaining: Math.max(0, b.capacity - held), held };
    }
    const stored = await this.client.get(b.key);
    const tat = stored === null ? now : Math.max(Number(stored), now);
    // The script keeps µs; outcome() reckons in ms.
    return { remaining: outcome(b, tat / 1000, now / 1000).remaining };
  }

  async reset(b: Bucket): Promise<void> {
    await this.client.del(b.key);
  }

  async close(): Promise<void> {
    this.leases.close();
    if (this.ownsClient) await closeRedis(this.client);
  }
}
