import type { Redis } from 'ioredis';
import type { Logger } from 'pino';

/**
 * Removes a deleted deployment's Agent Server data from Redis: SCAN + UNLINK of `<dataPrefix>:<deployment id>:*`
 * only (glob characters in the prefix escaped), never another deployment's keys.
 */
export async function removeDeploymentData(
  redis: Redis,
  dataPrefix: string,
  deploymentId: string,
  log: Logger,
): Promise<void> {
  const match = `${dataPrefix}:${deploymentId}:*`.replace(/[?[\]\\]/g, '\\$&');
  let cursor = '0';
  let removed = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 500);
    cursor = next;
    if (keys.length > 0) removed += await redis.unlink(...keys);
  } while (cursor !== '0');
  log.info({ deploymentId, keys: removed }, 'deployment data removed');
}
