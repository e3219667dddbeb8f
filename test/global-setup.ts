import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { deleteByPrefix } from './helpers/redis-keys.ts';

/**
 * One run of the suite: a prefix of its own for the deployment route tables of the gateways the tests start on the
 * shared Redis without naming one (test/helpers/routes-prefix.ts), removed when the run ends.
 */
export default function setup() {
  const prefix = (process.env.TEST_ROUTES_PREFIX ??= `test-routes-${randomBytes(6).toString('hex')}`);
  return async () => {
    const redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 1 });
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
