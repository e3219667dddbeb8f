import type { Env } from './env.ts';
import { servicePrefix } from './key-registry.ts';

/**
 * ROUTES_PREFIX (default `routes`): where the deployment route table lives in Redis. Read by the edge and by the
 * control plane, which must agree on it (the table's keys also carry the REGION).
 */
export function routesPrefixSetting(env: Env): string {
  return servicePrefix(env, 'ROUTES_PREFIX', 'routes');
}
