import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

/**
 * The item store's three atomic steps (item-put.lua, item-delete.lua,
 * item-refresh.lua) as one Redis Functions library, so a deployment's Redis
 * user needs `FCALL` only and never `EVAL`: a user that may EVAL may run
 * `while true do end` and hold Redis BUSY for every tenant. Functions are
 * loaded by the platform's own client (`FUNCTION LOAD`, which no deployment
 * user may send), so the only code a deployment can run inside Redis is this,
 * bounded by its arguments. MULTI/EXEC with WATCH would need no loading, but
 * WATCH belongs to a connection, which the stores share between concurrent
 * calls (a lock per client, a retry loop and three round trips per put instead
 * of one).
 *
 * The library and its functions are named after a hash of their code: two
 * gateway versions sharing a Redis (a rolling upgrade) each call their own.
 */
const PUT = readFileSync(new URL('./item-put.lua', import.meta.url), 'utf8');
const DELETE = readFileSync(new URL('./item-delete.lua', import.meta.url), 'utf8');
const REFRESH = readFileSync(new URL('./item-refresh.lua', import.meta.url), 'utf8');

const BODIES = { put: PUT, delete: DELETE, refresh: REFRESH } as const;
type ItemFunction = keyof typeof BODIES;
/**
 * Each script's body runs as a function of (KEYS, ARGV): the scripts keep their EVAL shape and comments. A function
 * without flags may write and is refused while Redis is over `maxmemory`; deleting and refreshing (no growth) may run
 * then (`allow-oom`), so a full store can still be emptied.
 */
const FLAGS: Record<ItemFunction, string> = { put: '', delete: "'allow-oom'", refresh: "'allow-oom'" };
const library = (name: string) =>
  [
    `#!lua name=${name}`,
    ...Object.entries(BODIES).map(
      ([fn, body]) =>
        `redis.register_function{function_name='${name}_${fn}', flags={${FLAGS[fn as ItemFunction]}}, ` +
        `callback=function(KEYS, ARGV)\n${body}\nend}`,
    ),
  ].join('\n');
const VERSION = createHash('sha256').update(library('')).digest('hex').slice(0, 12);
const LIBRARY = `gw_items_${VERSION}`;
const CODE = library(LIBRARY);

/** The functions' names: FCALL <name> <numkeys> keys... args... */
export const ITEM_FUNCTIONS: Readonly<Record<ItemFunction, string>> = {
  put: `${LIBRARY}_put`,
  delete: `${LIBRARY}_delete`,
  refresh: `${LIBRARY}_refresh`,
};

/** Loads the library unless this version is there already. Needs a user allowed `FUNCTION LOAD` (the platform's). */
export async function loadItemFunctions(redis: Redis): Promise<void> {
  try {
    await redis.call('FUNCTION', 'LOAD', CODE);
  } catch (err) {
    if (!/already exists/i.test((err as Error).message)) throw err;
  }
}

/** Whether an error says the library is not loaded (a Redis restarted without it, or never loaded). */
export function isFunctionMissing(err: unknown): boolean {
  return err instanceof Error && /function not found/i.test(err.message);
}
