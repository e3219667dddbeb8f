import { randomUUID } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';

/**
 * The machine's Redis, shared with every other test run (and other people's work): never flushed, stopped or
 * reconfigured; a test writes only under a prefix of its own (uniquePrefix) and removes it afterwards. A test that
 * needs to own a server (stop it, SCRIPT FLUSH, pause it) starts a private one (support/redis-server.ts). TEST_REDIS_URL
 * points the suite at another shared Redis.
 */
export const SHARED_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A client of the shared Redis; one retry per request unless `options` says otherwise. */
export function sharedRedis(options: RedisOptions = {}): Redis {
  return new Redis(SHARED_REDIS_URL, { maxRetriesPerRequest: 1, ...options });
}

/**
 * A key prefix no other test, worker or run uses: `<label>:<uuid>`. It is no substitute for removing the keys
 * afterwards (deleteByPrefix in redis-keys.ts).
 */
export function uniquePrefix(label: string): string {
  return `${label}:${randomUUID()}`;
}
