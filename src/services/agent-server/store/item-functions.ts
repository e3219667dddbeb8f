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
type ItemFunction = 'put' | 'delete' | 'refresh';
/**
 * Each script's body runs as a function of (KEYS, ARGV): the scripts keep their EVAL shape and comments. A function
 * without flags may write and is refused while Redis is over `maxmemory`; deleting and refreshing (no growth) may run
 * then (`allow-oom`), so a full store can still be emptied.
 */
const FLAGS: Record<ItemFunction, string> = { put: '', delete: "'allow-oom'", refresh: "'allow-oom'" };

/** The library as the scripts on disk make it now: its code and its functions' names. */
export function itemLibrary(): { readonly code: string; readonly functions: Readonly<Record<ItemFunction, string>> } {
  const read = (fn: ItemFunction) => readFileSync(new URL(`./item-${fn}.lua`, import.meta.url), 'utf8');
  const bodies = { put: read('put'), delete: read('delete'), refresh: read('refresh') };
  const library = (name: string) =>
    [
      `#!lua name=${name}`,
      ...(Object.keys(bodies) as ItemFunction[]).map(
        (fn) =>
          `redis.register_function{function_name='${name}_${fn}', flags={${FLAGS[fn]}}, ` +
          `callback=function(KEYS, ARGV)\n${bodies[fn]}\nend}`,
      ),
    ].join('\n');
  const name = `gw_items_${createHash('sha256').update(library('')).digest('hex').slice(0, 12)}`;
  return {
    code: library(name),
    functions: { put: `${name}_put`, delete: `${name}_delete`, refresh: `${name}_refresh` },
  };
}

const OWN = itemLibrary();
/** The functions this process's item store calls: FCALL <name> <numkeys> keys... args... */
export const ITEM_FUNCTIONS = OWN.functions;

/**
 * Loads a library (default: this process's) unless that version is there already. Needs a user allowed
 * `FUNCTION LOAD` (the platform's). The control plane loads `itemLibrary()` as on disk at each revision start: the
 * version the revision's process will read, even if the gateway's files changed since it started.
 */
export async function loadItemFunctions(redis: Redis, code: string = OWN.code): Promise<void> {
  try {
    await redis.call('FUNCTION', 'LOAD', code);
  } catch (err) {
    if (!/already exists/i.test((err as Error).message)) throw err;
  }
}

/** Whether an FCALL names an item delete, of any version of the library (it frees memory: allowed over a budget). */
export function isItemDelete(functionName: string): boolean {
  return /^gw_items_[0-9a-f]{12}_delete$/.test(functionName);
}

/** Whether an error says the library is not loaded (a Redis restarted without it, or never loaded). */
export function isFunctionMissing(err: unknown): boolean {
  return err instanceof Error && /function not found/i.test(err.message);
}
