import { randomBytes } from 'node:crypto';

/**
 * A gateway started by a test on Redis writes a deployment route table (the default deployment's route at least).
 * Unless the test names its own ROUTES_PREFIX, it gets one under this run's prefix (test/global-setup.ts), so no test
 * writes the shared Redis' default `routes:` table and the run removes what its gateways wrote.
 */
export function withRoutesPrefix(env: Record<string, string>): Record<string, string> {
  if (env.REDIS_URL === undefined || env.ROUTES_PREFIX !== undefined) return env;
  const run = process.env.TEST_ROUTES_PREFIX ?? 'test-routes';
  return { ...env, ROUTES_PREFIX: `${run}-${randomBytes(4).toString('hex')}` };
}
