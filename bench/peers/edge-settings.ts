/**
 * The edge benchmark's settings (environment variables, see bench/README.md), the two limited paths it loads, its
 * targets and scenarios, and the names (key prefixes) of this run.
 */
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { parse, stringify } from 'yaml';
import type { LimitedPath } from './checks.ts';

export const QUICK = process.env.BENCH_QUICK === '1' || process.argv.includes('--quick');
export const SECONDS = Number(process.env.BENCH_SECONDS ?? (QUICK ? 2 : 10));
export const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? (QUICK ? 0.5 : 2));
/**
 * Added to the first warm-up of each process: a fresh process loads code lazily and runs cold for seconds on a slow
 * machine.
 */
export const FIRST_WARMUP_SECONDS = Number(process.env.BENCH_FIRST_WARMUP_SECONDS ?? (QUICK ? 2 : 10));
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
/**
 * BENCH_SIDE_BY_SIDE=1: the scenarios with the same keys run at the same time, every process under test on the one
 * tested core, each with its own load generator. The machine's noise then falls on all of them alike, and req per
 * CPU-second compares two versions of the edge steadily (different programs lose differently at the lower rate each
 * then runs at: bench/README.md); latency is the shared core's and is not judged.
 */
export const SIDE_BY_SIDE = process.env.BENCH_SIDE_BY_SIDE === '1';
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
export const ROTATING_KEYS = 1000;
export const FAIL_MODE = process.env.BENCH_FAIL_MODE ?? 'closed';
/**
 * The edges' STORE_TIMEOUT_MS; unset = the edge's default, or 2 s side by side: there each event loop waits its turn on
 * the shared core, and a reply read late is the method's doing, not a store failure.
 */
export const STORE_TIMEOUT_MS = process.env.BENCH_STORE_TIMEOUT_MS ?? (SIDE_BY_SIDE ? '2000' : undefined);
/**
 * A Redis named by the caller. Unset, bench:edge starts a private one pinned beside the load generator
 * (private-redis.ts), and uses REDIS_URL only where it cannot (no `redis-server` installed).
 */
export const GIVEN_REDIS_URL = process.env.BENCH_REDIS_URL;
export const REDIS_URL = GIVEN_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const ALT_ROOT = process.env.BENCH_EDGE_ALT ? resolve(process.env.BENCH_EDGE_ALT) : null;
const list = (v: string | undefined) =>
  v
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
export const PROFILE = process.env.BENCH_PROFILE === '1' ? ['edge-redis'] : (list(process.env.BENCH_PROFILE) ?? []);
const ONLY = list(process.env.BENCH_ONLY);
/**
 * WORKERS of the `edge-workers-n` target: one per CPU but the load generator's on 3 or more CPUs, else every CPU (2
 * here: the load generator then competes with the workers).
 */
export const WORKERS_N = Number(
  process.env.BENCH_WORKERS ?? (availableParallelism() >= 3 ? availableParallelism() - 1 : availableParallelism()),
);
export const TARGET_RATIO = 1.3;
/** The edge with Redis buckets and its request log on, as a share of the bare proxy's 2xx/s. */
export const TARGET_BARE_RATIO = 0.9;
export const TARGET_P99_MS = 10;
export const ROOT = join(import.meta.dirname, '..', '..');
export const RESULTS = join(import.meta.dirname, '..', 'results');

// ---- what is measured ------------------------------------------------------

/**
 * One key: a rule placed first in a copy of rules/us.yaml, with a count no run
 * can exhaust, so the single key is counted on every request but never denied.
 * Rotating keys: the real `default` rule (1000 per 10 s per key), reached after
 * every other rule is tried; 1,000 keys at under 100 req/s each stay below it.
 */
export const ONE_KEY: LimitedPath = {
  path: '/bench/one-key',
  rule: 'bench-one-key',
  count: 100_000_000,
  perSeconds: 1,
};
export const ROTATING: LimitedPath = { path: '/some/path', rule: 'default', count: 1000, perSeconds: 10 };
/**
 * The edges' copy of a rule file (rules/us.yaml's text): the one-key rule placed first, and every guard's count raised
 * out of reach (100 million), so that the guards' buckets are counted on every request, as in production, but the
 * load generator (one client IP) never meets their ceiling.
 */
export function benchRules(text: string, inFlight = false): string {
  const parsed = parse(text) as unknown;
  const file = (Array.isArray(parsed) ? { rules: parsed } : parsed) as {
    guards?: { count?: number; concurrent?: number }[];
    rules: unknown[];
  };
  const oneKey = {
    id: ONE_KEY.rule,
    match: { prefix: '/bench' },
    limits: [{ by: 'api-key', count: ONE_KEY.count, per: `${ONE_KEY.perSeconds}s`, category: 'Benchmark' }],
  };
  const rules = [oneKey, ...file.rules];
  const header = '# Written by bench/edge.ts from rules/us.yaml (see benchRules).\n';
  // A file without guards stays a bare list: the form every version of the loader reads.
  if (file.guards === undefined && !inFlight) return header + stringify(rules);
  // In-flight guards (the run-starting endpoints' in the shipped files) get the most slots a file may give.
  const guards = (file.guards ?? []).map((g) =>
    g.concurrent === undefined ? { ...g, count: ONE_KEY.count } : { ...g, concurrent: IN_FLIGHT_SLOTS },
  );
  if (inFlight) guards.push(IN_FLIGHT_GUARD);
  return header + stringify({ guards, rules });
}

/** Slots of the in-flight guard: out of reach (the load generator holds at most CONNECTIONS at once). */
export const IN_FLIGHT_SLOTS = 1_000_000;
/**
 * The `-inflight` targets' extra guard: a slot per API key held until the response ends, on every request a rule
 * decides (both measured paths), taken in the same store call as the buckets and given back when the response ends.
 */
export const IN_FLIGHT_GUARD = {
  id: 'bench-in-flight',
  by: 'api-key',
  concurrent: IN_FLIGHT_SLOTS,
  until: 'response',
  category: 'Benchmark in flight',
};
export const isInFlightTarget = (t: TargetName) => t.endsWith('-inflight');

export type TargetName =
  | 'direct'
  | 'bare-proxy'
  | 'edge-memory'
  | 'edge-redis'
  | 'edge-memory-inflight'
  | 'edge-redis-inflight'
  | 'fastify-redis'
  | 'edge-redis-warn'
  | 'edge-redis-alt'
  | 'edge-workers-1'
  | 'edge-workers-n';
export type EdgeTarget = Extract<TargetName, `edge-${string}`>;

export const LABELS: Record<TargetName, string> = {
  direct: 'direct (upstream alone)',
  'bare-proxy': 'bare proxy (http + undici)',
  'edge-memory': 'edge, memory store',
  'edge-redis': 'edge, Redis',
  'edge-memory-inflight': 'edge, memory store, + in-flight guard',
  'edge-redis-inflight': 'edge, Redis, + in-flight guard',
  'fastify-redis': 'fastify peer, Redis',
  'edge-redis-warn': 'edge, Redis, LOG_LEVEL=warn',
  'edge-redis-alt': `edge, Redis, ${ALT_ROOT ?? ''}`,
  'edge-workers-1': 'edge, Redis, WORKERS=1 (workers CPUs)',
  'edge-workers-n': `edge, Redis, WORKERS=${WORKERS_N} (workers CPUs)`,
};

export const SCENARIOS: readonly { target: TargetName; keys: number }[] = (
  [
    { target: 'direct', keys: ROTATING_KEYS },
    { target: 'bare-proxy', keys: ROTATING_KEYS },
    { target: 'edge-memory', keys: 1 },
    { target: 'edge-memory', keys: ROTATING_KEYS },
    { target: 'edge-redis', keys: 1 },
    { target: 'edge-redis', keys: ROTATING_KEYS },
    { target: 'edge-memory-inflight', keys: ROTATING_KEYS },
    { target: 'edge-redis-inflight', keys: 1 },
    { target: 'edge-redis-inflight', keys: ROTATING_KEYS },
    ...(ALT_ROOT ? [{ target: 'edge-redis-alt', keys: ROTATING_KEYS } as const] : []),
    { target: 'fastify-redis', keys: 1 },
    { target: 'fastify-redis', keys: ROTATING_KEYS },
    { target: 'edge-redis-warn', keys: ROTATING_KEYS },
    { target: 'edge-workers-1', keys: ROTATING_KEYS },
    { target: 'edge-workers-n', keys: ROTATING_KEYS },
  ] as const
).filter((s) => !ONLY || ONLY.includes(s.target));
export const runs = (target: TargetName) => SCENARIOS.some((s) => s.target === target);
/** Targets that count in Redis (the others never touch it). */
export const usesRedis = (target: TargetName) =>
  target !== 'direct' && target !== 'bare-proxy' && target !== 'edge-memory' && target !== 'edge-memory-inflight';

export const runId = `${Date.now().toString(36)}-${process.pid.toString(36)}`;
/** Within KEY_PREFIX's 32 characters: the target without its `edge-`, `-inflight` shortened. */
export const edgePrefix = (t: EdgeTarget) => `bench-${runId}-${t.slice(5).replace('-inflight', '-if')}`;
export const peerNamespace = `bench-${runId}-fastify-`;
export const EDGE_TARGETS = [
  'edge-memory',
  'edge-redis',
  'edge-memory-inflight',
  'edge-redis-inflight',
  'edge-redis-warn',
  'edge-redis-alt',
  'edge-workers-1',
  'edge-workers-n',
] as const;
/** The workers targets: the edge with WORKERS=1 and WORKERS_N, on the CPUs of workersPinning (not the proxy's one). */
export const isWorkersTarget = (t: TargetName) => t === 'edge-workers-1' || t === 'edge-workers-n';
/** Redis key patterns this run writes, deleted at the end (SCAN + UNLINK; the shared Redis is never flushed). */
export const redisPatterns = [
  ...EDGE_TARGETS.filter((t) => usesRedis(t)).map((t) => `${edgePrefix(t)}:*`),
  `${peerNamespace}*`,
];
