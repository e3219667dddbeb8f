import type { Redis } from 'ioredis';
import type { Logger } from 'pino';

/**
 * At start, what the operator's Redis leaves open to a tenant that the
 * gateway cannot close itself, read with the platform's credentials (CONFIG
 * GET, where its user may) and said once, one line each, with what to set.
 * The gateway never changes the operator's Redis (no CONFIG SET).
 */
export interface RedisAdvice {
  readonly setting: string;
  readonly value: string;
  readonly advice: string;
}

/** Pure: the advice for the values CONFIG GET answered. */
export function redisServerAdvice(config: ReadonlyMap<string, string>, perRevisionConnections: number): RedisAdvice[] {
  const out: RedisAdvice[] = [];
  const maxmemory = config.get('maxmemory');
  if (maxmemory === '0')
    out.push({
      setting: 'maxmemory',
      value: maxmemory,
      advice:
        'Redis has no memory bound: each deployment has a byte budget (DEPLOYMENT_REDIS_MAX_MB), but nothing bounds ' +
        'all of them together; set maxmemory to what the host can give Redis, with maxmemory-policy noeviction',
    });
  const policy = config.get('maxmemory-policy');
  if (policy !== undefined && policy.startsWith('allkeys-'))
    out.push({
      setting: 'maxmemory-policy',
      value: policy,
      advice:
        'a full Redis evicts any key, the platform\u2019s (API keys, routes, deployments) included, to make room for a ' +
        'tenant\u2019s data; set maxmemory-policy noeviction (writes are refused instead)',
    });
  const maxclients = config.get('maxclients');
  if (maxclients === '10000')
    out.push({
      setting: 'maxclients',
      value: maxclients,
      advice:
        `Redis's default: set it to what the platform needs (each gateway process's clients, plus ${perRevisionConnections} ` +
        '(DEPLOYMENT_REDIS_CONNECTIONS) per running revision), below the open files Redis may have, so a flood of ' +
        'connections is refused before Redis runs out of descriptors',
    });
  const timeout = config.get('timeout');
  if (timeout === '0')
    out.push({
      setting: 'timeout',
      value: timeout,
      advice: 'idle connections are never closed (unauthenticated ones included); set timeout, e.g. 300 (seconds)',
    });
  return out;
}

/** Reads the settings and logs the advice; a refused CONFIG GET (a managed Redis) is said once, without failing. */
export async function adviseOnRedisServer(redis: Redis, perRevisionConnections: number, log: Logger): Promise<void> {
  const config = new Map<string, string>();
  try {
    for (const name of ['maxmemory', 'maxmemory-policy', 'maxclients', 'timeout']) {
      const pair = (await redis.call('CONFIG', 'GET', name)) as string[];
      if (pair.length >= 2) config.set(pair[0]!, pair[1]!);
    }
  } catch (err) {
    log.info(
      { err: (err as Error).message.slice(0, 200) },
      'cannot read Redis\u2019s configuration: check maxmemory, maxmemory-policy noeviction, maxclients and timeout yourself',
    );
    return;
  }
  for (const { setting, value, advice } of redisServerAdvice(config, perRevisionConnections))
    log.warn({ redis: setting, value }, `Redis ${setting} ${value}: ${advice}`);
}
