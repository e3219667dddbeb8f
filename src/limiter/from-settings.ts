import type { Cluster, Redis } from 'ioredis';
import { createRedisClient, createRedisCluster, type RedisClientOptions } from '../redis-client.ts';
import type { Settings } from '../settings/settings.ts';
import { MemoryLimiter } from './memory-limiter.ts';
import { RedisLimiter } from './redis-limiter.ts';
import type { KeyScheme } from './bucket-key.ts';
import type { BucketAdmin, Limiter } from './types.ts';

export interface Store {
  readonly kind: 'memory' | 'redis' | 'redis-cluster';
  readonly limiter: Limiter & BucketAdmin;
  /**
   * Resolves true once the store can answer, false on its first connection
   * error (memory: true at once). Never rejects; the caller bounds the wait.
   */
  connected(): Promise<boolean>;
}

/**
 * The bucket store the settings name. On a single Redis the limiter batches
 * concurrent calls itself; a Cluster client pipelines them per node
 * (auto-pipelining). Neither queues commands while disconnected: a dead
 * store costs a request its timeout budget, not a growing queue.
 */
export function storeFromSettings(settings: Settings): Store {
  const common: RedisClientOptions = { offlineQueue: false, retriesPerRequest: 1, onError: ignoreConnectionError };
  const options = { timeoutMs: settings.storeTimeoutMs, leaseMs: settings.slotLeaseMs };
  if (settings.redisClusterNodes.length > 0) {
    const cluster = createRedisCluster(settings.redisClusterNodes, { ...common, autoPipelining: true });
    return { kind: 'redis-cluster', limiter: new RedisLimiter(cluster, options), connected: () => connected(cluster) };
  }
  if (settings.redisUrl !== null) {
    const client = createRedisClient(settings.redisUrl, common);
    return { kind: 'redis', limiter: new RedisLimiter(client, options), connected: () => connected(client) };
  }
  return {
    kind: 'memory',
    limiter: new MemoryLimiter({ maxKeys: settings.memoryMaxKeys }),
    connected: async () => true,
  };
}

/** How bucket keys are made (prefix, region, the identity digest's secret): the same in every edge process. */
export function keySchemeFromSettings(settings: Settings): KeyScheme {
  return { prefix: settings.keyPrefix, region: settings.region, secret: settings.identitySecret };
}

/**
 * Connection errors reach the edge as StoreErrors of the calls they fail,
 * and the breaker logs each transition once. Without a listener ioredis
 * prints every failed reconnect attempt, stack and all, to stderr.
 */
function ignoreConnectionError(): void {}

/** With the offline queue off, a command sent before 'ready' fails at once: boot waits for the first connection. */
function connected(client: Redis | Cluster): Promise<boolean> {
  if (client.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => () => {
      client.off('ready', onReady);
      client.off('error', onError);
      resolve(ok);
    };
    const onReady = done(true);
    const onError = done(false);
    client.once('ready', onReady);
    client.once('error', onError);
  });
}
