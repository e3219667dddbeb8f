import { Cluster, Redis } from 'ioredis';
import type { Settings } from '../settings.ts';
import { MemoryLimiter } from './memory-limiter.ts';
import { RedisLimiter } from './redis-limiter.ts';
import type { Limiter } from './types.ts';

export interface Store {
  readonly kind: 'memory' | 'redis' | 'redis-cluster';
  readonly limiter: Limiter;
}

/**
 * The bucket store the settings name. Redis clients pipeline concurrent
 * calls automatically and never queue commands while disconnected: a dead
 * store costs a request its timeout budget, not a growing queue.
 */
export function storeFromSettings(settings: Settings): Store {
  const common = { enableAutoPipelining: true, enableOfflineQueue: false, maxRetriesPerRequest: 1 } as const;
  const options = { timeoutMs: settings.storeTimeoutMs };
  if (settings.redisClusterNodes.length > 0) {
    const cluster = new Cluster([...settings.redisClusterNodes], common);
    return { kind: 'redis-cluster', limiter: new RedisLimiter(cluster, options) };
  }
  if (settings.redisUrl !== null) {
    return { kind: 'redis', limiter: new RedisLimiter(new Redis(settings.redisUrl, common), options) };
  }
  return { kind: 'memory', limiter: new MemoryLimiter({ maxKeys: settings.memoryMaxKeys }) };
}
