import { readFileSync } from 'node:fs';
import type { Cluster, Redis } from 'ioredis';
import { StoreError, type Bucket, type BucketOutcome, type LimitOutcome } from './types.ts';

/**
 * token-bucket.lua as ioredis commands, and the layout of its keys, arguments
 * and reply: what the single-Redis batch and the Cluster path share. ioredis's
 * defined commands send EVALSHA, fall back to EVAL on NOSCRIPT, and apply the
 * client's keyPrefix.
 */

const LUA = readFileSync(new URL('./token-bucket.lua', import.meta.url), 'utf8');

/** The batch script: key count first, so one script can carry any number of calls. */
const BATCH_COMMAND = 'gatewayTokenBucket';
/** Buckets per cluster script; a longer call is split like a cross-slot one. */
export const MAX_KEYS_PER_SCRIPT = 16;
/** Cluster scripts are defined per key count (numberOfKeys fixed), so ioredis routes and pipelines by the first key. */
const FIXED_KEY_COMMANDS = Array.from({ length: MAX_KEYS_PER_SCRIPT + 1 }, (_, n) => `${BATCH_COMMAND}${n}`);

export type Mode = 'take' | 'refund' | 'renew';
type ScriptCall = (...args: (string | number)[]) => Promise<unknown>;

/** One call's result as the script replies it (on a Cluster, one slot group's). */
export interface ScriptResult {
  readonly allowed: boolean;
  readonly buckets: BucketOutcome[];
}

/** Single Redis: defines the batch script (defined up front: an ioredis pipeline copies the scripts it is created with). */
export function defineBatchScript(client: Redis): void {
  client.defineCommand(BATCH_COMMAND, { lua: LUA });
}

/** Runs the batch script: key count, keys, then each call's arguments (see `addCall`). */
export function runBatchScript(client: Redis, args: (string | number)[]): Promise<unknown> {
  const script = (client as unknown as Record<string, ScriptCall>)[BATCH_COMMAND]!;
  return script.apply(client, args);
}

/** Cluster: defines one script per key count, 1 to MAX_KEYS_PER_SCRIPT. */
export function defineFixedKeyScripts(client: Cluster): void {
  for (let n = 1; n <= MAX_KEYS_PER_SCRIPT; n++)
    client.defineCommand(FIXED_KEY_COMMANDS[n]!, { numberOfKeys: n, lua: LUA });
}

/** Runs the script of `keys.length` keys on the node that holds them. */
export function runFixedKeyScript(client: Cluster, keys: string[], argv: (string | number)[]): Promise<unknown> {
  const script = (client as unknown as Record<string, ScriptCall>)[FIXED_KEY_COMMANDS[keys.length]!]!;
  return script.apply(client, [...keys, ...argv]);
}

/** A call's lease: the id its slots are held under, and how long they last unless renewed (µs). */
export interface LeaseArgs {
  readonly id: string;
  readonly ttlUs: number;
}

const NO_LEASE: LeaseArgs = { id: '', ttlUs: 0 };

/**
 * Appends one call to the script's keys and arguments: its mode, its number of buckets, its lease, then each bucket's
 * capacity and period (µs; 0 for an in-flight bucket).
 */
export function addCall(
  keys: string[],
  argv: (string | number)[],
  mode: Mode,
  buckets: readonly Bucket[],
  lease: LeaseArgs = NO_LEASE,
): void {
  argv.push(mode, buckets.length, lease.id, lease.ttlUs);
  for (const b of buckets) {
    keys.push(b.key);
    argv.push(b.capacity, b.inFlight ? 0 : Math.round(b.perSeconds * 1e6));
  }
}

/** The script's flat reply, cut into one result per call (`sizes`: each call's bucket count). */
export function readReply(reply: unknown, sizes: readonly number[]): ScriptResult[] {
  const expected = sizes.reduce((sum, n) => sum + 1 + 3 * n, 0);
  if (!Array.isArray(reply) || reply.length !== expected)
    throw new StoreError(`redis: unexpected script reply (${Array.isArray(reply) ? reply.length : typeof reply})`);
  const results: ScriptResult[] = [];
  let at = 0;
  for (const n of sizes) {
    const allowed = reply[at++] === 1;
    const buckets: BucketOutcome[] = [];
    for (let j = 0; j < n; j++, at += 3)
      buckets.push({
        remaining: Number(reply[at]),
        msToNextToken: Number(reply[at + 1]),
        msToToken: Number(reply[at + 2]),
      });
    results.push({ allowed, buckets });
  }
  return results;
}

export function outcomeOf({ allowed, buckets }: ScriptResult): LimitOutcome {
  let retryAfterMs = 0;
  if (!allowed) for (const b of buckets) retryAfterMs = Math.max(retryAfterMs, b.msToToken);
  return { allowed, buckets, retryAfterMs };
}
