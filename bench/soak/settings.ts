/** The soak's settings (environment variables, see bench/README.md), its targets, and the names of this run. */
import { join } from 'node:path';

export const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
export const IDENTITIES = Number(process.env.SOAK_IDENTITIES ?? 100_000);
export const COLD_WORKERS = Number(process.env.SOAK_WORKERS ?? 16);
export const REDIS_URL = process.env.SOAK_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** Samples before this share of the run are warm-up: JIT, pools, caches filling. */
export const WARMUP_SHARE = 0.25;
export const SAMPLE_MS = 2000;
export const TARGET_ACCURACY = [0.99, 1.0] as const;
/** Largest growth allowed after warm-up (fitted line, start to end of the window, relative to its mean). */
export const MAX_GROWTH = 0.1;
/**
 * Every this often the edge's heap is collected (full GC through its inspector) before a sample: the live heap, not
 * garbage.
 */
export const GC_SAMPLE_MS = 10_000;
/** Entries per generation of the edge's identity-digest cache (`cachedBucketKeys` in src/limiter/bucket-key.ts). */
export const DIGEST_CACHE_GENERATION = 50_000;
export const ROOT = join(import.meta.dirname, '..', '..');
export const RESULTS = join(import.meta.dirname, '..', 'results');

export const runId = `${Date.now().toString(36)}-${process.pid.toString(36)}`;
export const KEY_PREFIX = `soak-${runId}`;
