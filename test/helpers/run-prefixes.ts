import { randomBytes } from 'node:crypto';

/** The Redis prefixes of what a gateway's bundled services write (the buckets' KEY_PREFIX is the tests' own affair). */
const SERVICE_PREFIXES = [
  'ROUTES_PREFIX',
  'CONTROL_PLANE_PREFIX',
  'API_KEYS_PREFIX',
  'AGENT_STORE_PREFIX',
  'DEPLOYMENT_DATA_PREFIX',
] as const;

/**
 * A gateway a test starts on Redis writes there through its bundled services (the default deployment and its route,
 * the development key, the example app's assistants). Every prefix the test does not name gets one of this gateway
 * under the run's prefix (test/global-setup.ts): no test writes the shared Redis' default `routes:`, `keys:`, `cp:` or
 * `agent:` keys, two tests never share them by chance, and the run removes what its gateways wrote.
 */
export function withRunPrefixes(env: Record<string, string>): Record<string, string> {
  if (!env.REDIS_URL) return env;
  const own = `${process.env.TEST_RUN_PREFIX ?? 'test-run'}-${randomBytes(4).toString('hex')}`;
  const named: Record<string, string> = {};
  for (const name of SERVICE_PREFIXES)
    if (env[name] === undefined) named[name] = `${own}-${name.split('_')[0]!.toLowerCase()}`;
  return { ...named, ...env };
}
