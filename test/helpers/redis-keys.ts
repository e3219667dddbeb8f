import type { Redis } from 'ioredis';

/** Every key starting with `prefix`, found with SCAN (never KEYS). */
export async function keysByPrefix(client: Redis, prefix: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    found.push(...keys);
    cursor = next;
  } while (cursor !== '0');
  return found;
}

/** Removes every key starting with `prefix` (SCAN MATCH + UNLINK); the rest of the shared Redis is left alone. */
export async function deleteByPrefix(client: Redis, prefix: string): Promise<void> {
  const keys = await keysByPrefix(client, prefix);
  for (let i = 0; i < keys.length; i += 500) await client.unlink(...keys.slice(i, i + 500));
}
