import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { deleteByPrefix } from './helpers/redis-keys.ts';
import { SHARED_REDIS_URL } from './helpers/shared-redis.ts';

/**
 * One run of the suite: a prefix of its own for what the gateways the tests start write on the shared Redis under
 * prefixes the tests do not name (test/helpers/run-prefixes.ts), removed when the run ends.
 */
export default function setup() {
  const prefix = (process.env.TEST_RUN_PREFIX ??= `test-run-${randomBytes(6).toString('hex')}`);
  return async () => {
    const redis = new Redis(SHARED_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await redis.connect();
      await deleteByPrefix(redis, prefix);
    } catch {
      // No shared Redis in this run: nothing was written there.
    } finally {
      redis.disconnect();
    }
  };
}
