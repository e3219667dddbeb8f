/**
 * What a deployment's own Redis user may do, as `ACL SETUSER` arguments, and
 * the URL its process connects with. Pure: no I/O (deployment-redis-users.ts
 * applies them).
 *
 * The commands are exactly those the Agent Server's Redis stores send
 * (agent-server/store/redis-agent-store.ts, redis-checkpointer.ts,
 * redis-item-store.ts and its functions) and its run relay
 * (relay/redis-run-relay.ts), which publishes and subscribes on channels
 * under the deployment's prefix only (`&<prefix>:*`). Everything else is denied: KEYS,
 * SCAN, FLUSHALL, CONFIG, ACL, INFO, CLIENT, DEBUG, MODULE, FUNCTION, and
 * EVAL/EVALSHA (a script of its own could loop forever and hold Redis BUSY for
 * every tenant). FCALL runs only functions the platform loaded
 * (item-functions.ts). The key pattern bounds every allowed command, FCALL's
 * included (Redis checks each `redis.call` of a function against the caller's
 * keys and commands).
 */
export const DEPLOYMENT_COMMANDS = [
  // strings and keys
  'get',
  'set',
  'mget',
  'exists',
  'unlink',
  'del',
  // sets
  'sadd',
  'srem',
  'smembers',
  // hashes (hdel, hlen, hincrby: the item store's scripts and their counters)
  'hset',
  'hsetnx',
  'hget',
  'hmget',
  'hgetall',
  'hdel',
  'hlen',
  'hincrby',
  // sorted sets (zrem: the delete script; zscore, zrangebyscore: items with a TTL, by when they expire)
  'zadd',
  'zrange',
  'zrangebyscore',
  'zscore',
  'zrevrange',
  'zrevrangebylex',
  'zrem',
  // the item store's put, delete and refresh (Redis Functions the platform loads, item-functions.ts); MULTI
  'fcall',
  'multi',
  'exec',
  'discard',
  // the run relay (agent-server/relay/redis-run-relay.ts): runs' frames in streams, claims that expire, messages on
  // the deployment's channels (`&<prefix>:*`: cancels, threads released)
  'xadd',
  'xread',
  'xrevrange',
  'pexpire',
  'hkeys',
  'publish',
  'subscribe',
  'unsubscribe',
  // ioredis sends SELECT when REDIS_URL names a database (the pattern applies in every database)
  'select',
  'ping',
] as const;

/** The ACL user of a deployment. */
export function deploymentUserName(deploymentId: string): string {
  return `gw-dep-${deploymentId}`;
}

/**
 * `ACL SETUSER <name> ...` arguments: `reset` first, so a user left by an earlier start (or made by hand) keeps
 * nothing of its own: no old password, key, channel or command.
 */
export function deploymentUserRules(dataPrefix: string, password: string): string[] {
  return [
    'reset',
    'on',
    `>${password}`,
    `~${globEscape(dataPrefix)}:*`,
    'resetchannels',
    `&${globEscape(dataPrefix)}:*`,
    '-@all',
    ...DEPLOYMENT_COMMANDS.map((c) => `+${c}`),
  ];
}

/** The platform's URL with the deployment user's credentials instead: same scheme (TLS), host, port, db, options. */
export function deploymentRedisUrl(platformUrl: string, user: string, password: string): string {
  const url = new URL(platformUrl);
  url.username = encodeURIComponent(user);
  url.password = encodeURIComponent(password);
  return url.href;
}

function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
