import type { Cluster, Redis } from 'ioredis';
import { closeRedis } from '../redis-client.ts';
import { RedisBatchLimiter } from './redis-batch-limiter.ts';
import { RedisClusterLimiter } from './redis-cluster-limiter.ts';
import type { Bucket, Limiter, LimitOutcome } from './types.ts';

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
}

export class RedisLimiter implements Limiter {
  private readonly path: RedisBatchLimiter | RedisClusterLimiter;
  private readonly ownsClient: boolean;

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
    this.path = client.isCluster
      ? new RedisClusterLimiter(client as Cluster, timeoutMs)
      : new RedisBatchLimiter(client as Redis, timeoutMs);
    this.ownsClient = ownsClient;
  }

  consume(buckets: readonly Bucket[]): Promise<LimitOutcome> {
    if (buckets.length === 0) return Promise.resolve({ allowed: true, buckets: [], retryAfterMs: 0 });
    return this.path.consume(buckets);
  }

  async close(): Promise<void> {
    if (this.ownsClient) await closeRedis(this.client);
  }
}
