import type { Logger } from 'pino';
import { createRedisClient, SERVICE_REDIS } from '../redis-client.ts';
import { MemoryRouteTable } from './memory-route-table.ts';
import { RedisRouteTable } from './redis-route-table.ts';
import type { RouteTable } from './route-table.ts';

export interface RouteTableSettings {
  /** REDIS_URL; null = the table of this process only. */
  readonly redisUrl: string | null;
  /** ROUTES_PREFIX. */
  readonly routesPrefix: string;
  readonly region: string;
}

export interface OpenedRouteTable {
  readonly table: RouteTable;
  readonly kind: 'redis' | 'memory';
  /**
   * True once the table has been read from its store (at once in memory); false as soon as the first connection
   * fails (boot does not wait for a Redis that refuses: the table reads itself once Redis answers).
   */
  readonly ready: Promise<boolean>;
}

/**
 * The route table of a process: in Redis (its own connection, closed with it) under `<ROUTES_PREFIX>:<REGION>` when
 * REDIS_URL is set, so every edge and the control plane on that Redis share it; else in memory.
 */
export function routeTableFromSettings(settings: RouteTableSettings, log: Logger): OpenedRouteTable {
  if (settings.redisUrl === null)
    return { table: new MemoryRouteTable(), kind: 'memory', ready: Promise.resolve(true) };
  let lastError = '';
  const onError = (err: Error) => {
    if (err.message === lastError) return; // a Redis that stays away fails every reconnect the same way
    lastError = err.message;
    log.warn({ err: err.message }, 'deployment route table: redis error (the last known routes keep serving)');
  };
  const client = createRedisClient(settings.redisUrl, { ...SERVICE_REDIS, onError });
  client.on('ready', () => (lastError = ''));
  const table = new RedisRouteTable(client, {
    prefix: `${settings.routesPrefix}:${settings.region}`,
    ownsClient: true,
    onError,
  });
  const ready = new Promise<boolean>((resolve) => {
    void table.ready.then(() => resolve(true));
    client.once('error', () => resolve(false));
  });
  return { table, kind: 'redis', ready };
}
