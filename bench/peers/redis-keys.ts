/**
 * What the edge benchmark needs from the shared Redis: count and delete the
 * keys of one run by pattern (SCAN + UNLINK; the database is never flushed,
 * other users' keys are never touched), count the scripts Redis has run, and
 * find Redis's own process to read its CPU time.
 */
import type { Redis } from 'ioredis';
import { processName } from './processes.ts';

export async function countKeys(redis: Redis, pattern: string): Promise<number> {
  let n = 0;
  for await (const keys of redis.scanStream({ match: pattern, count: 1000 })) n += (keys as string[]).length;
  return n;
}

export async function deleteKeys(redis: Redis, pattern: string): Promise<number> {
  let n = 0;
  for await (const keys of redis.scanStream({ match: pattern, count: 1000 })) {
    if ((keys as string[]).length > 0) n += await redis.unlink(...(keys as string[]));
  }
  return n;
}

/** Scripts run so far by this Redis (EVAL, EVALSHA and their read-only forms, FCALL). */
export async function scriptCalls(redis: Redis): Promise<number> {
  const stats = await redis.info('commandstats');
  return [...stats.matchAll(/^cmdstat_(?:evalsha|eval|evalsha_ro|eval_ro|fcall):calls=(\d+)/gm)].reduce(
    (n, m) => n + Number(m[1]),
    0,
  );
}

/** The pid of the Redis server when it is a process on this machine we can see, else null. */
export async function redisPid(redis: Redis): Promise<number | null> {
  const pid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
  return pid && processName(pid)?.startsWith('redis') ? pid : null;
}
