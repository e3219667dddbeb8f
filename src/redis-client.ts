import { Cluster, Redis } from 'ioredis';

/**
 * The one place ioredis clients are made. Callers differ in how a client behaves while Redis is away, and say so with
 * these named options; an unset option keeps ioredis' default.
 */
export interface RedisClientOptions {
  /** How many reconnects a command waits through before it fails (ioredis `maxRetriesPerRequest`). */
  readonly retriesPerRequest: number;
  /**
   * false: a command sent while disconnected fails at once rather than waiting in a queue for the connection
   * (ioredis `enableOfflineQueue`; default true).
   */
  readonly offlineQueue?: boolean;
  /** Connect on `connect()` or the first command, not at once (ioredis `lazyConnect`). */
  readonly lazyConnect?: boolean;
  /** Budget of one connection attempt (ioredis `connectTimeout`). */
  readonly connectTimeoutMs?: number;
  /** Commands of one event-loop turn go out as one pipeline (per node on a cluster; ioredis `enableAutoPipelining`). */
  readonly autoPipelining?: boolean;
  /** false: no INFO before the first command (ioredis `enableReadyCheck`), for a user whose ACL has no INFO. */
  readonly readyCheck?: boolean;
  /**
   * Every 'error' event of the client. Required: without a listener ioredis prints every failed reconnect attempt,
   * stack and all, to stderr.
   */
  readonly onError: (err: Error) => void;
}

/**
 * The bundled services and the control plane: a command waits through two reconnects, so a short Redis blip delays
 * their requests rather than failing them.
 */
export const SERVICE_REDIS = { retriesPerRequest: 2 } as const;

/** A client of the single Redis at `url` (`redis://` or `rediss://`), or at a Unix socket's `path`. */
export function createRedisClient(url: string | { readonly path: string }, options: RedisClientOptions): Redis {
  const client =
    typeof url === 'string'
      ? new Redis(url, clientOptions(options))
      : new Redis({ path: url.path, ...clientOptions(options) });
  client.on('error', options.onError);
  return client;
}

/** A Redis Cluster client from its seed nodes. */
export function createRedisCluster(
  nodes: readonly { host: string; port: number }[],
  options: RedisClientOptions,
): Cluster {
  const cluster = new Cluster([...nodes], clientOptions(options));
  cluster.on('error', options.onError);
  return cluster;
}

/** The ioredis options the named ones stand for; only those given are set. */
function clientOptions(options: RedisClientOptions) {
  return {
    maxRetriesPerRequest: options.retriesPerRequest,
    ...(options.offlineQueue !== undefined && { enableOfflineQueue: options.offlineQueue }),
    ...(options.lazyConnect !== undefined && { lazyConnect: options.lazyConnect }),
    ...(options.connectTimeoutMs !== undefined && { connectTimeout: options.connectTimeoutMs }),
    ...(options.autoPipelining !== undefined && { enableAutoPipelining: options.autoPipelining }),
    ...(options.readyCheck !== undefined && { enableReadyCheck: options.readyCheck }),
  };
}

/**
 * Closes a client: QUIT (pending replies flushed) on a live connection, at once otherwise. QUIT would wait for a
 * reconnect while Redis is away, and fails on a client already closed.
 */
export async function closeRedis(client: Redis | Cluster): Promise<void> {
  if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
  else client.disconnect();
}
