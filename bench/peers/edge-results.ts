/**
 * What the edge benchmark concludes: the side-by-side ratios and the PASS/FAIL lines against its targets, the CPU
 * profiles of the profiled targets, and the JSON file (bench/results/edge-<time>.json and edge-latest.json).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { mainThreadProfile, summarise, type ProfileSummary } from './cpu-profile.ts';
import {
  ALT_ROOT,
  CONNECTIONS,
  FAIL_MODE,
  FIRST_WARMUP_SECONDS,
  ONE_KEY,
  PROFILE,
  QUICK,
  RESULTS,
  ROTATING,
  ROTATING_KEYS,
  ROUNDS,
  SCENARIOS,
  SECONDS,
  SIDE_BY_SIDE,
  STORE_TIMEOUT_MS,
  TARGET_BARE_RATIO,
  TARGET_P99_MS,
  TARGET_RATIO,
  WARMUP_SECONDS,
  WORKERS_N,
  type TargetName,
} from './edge-settings.ts';
import type { Measured } from './measure.ts';
import { machineNotes, pairRatios, showRatio, type scenarioRow } from './report.ts';

type Row = ReturnType<typeof scenarioRow<TargetName>>;

const PAIRS = {
  edge_memory_over_direct_1000_keys: ['edge-memory', ROTATING_KEYS, 'direct', ROTATING_KEYS],
  edge_memory_over_direct_one_key: ['edge-memory', 1, 'direct', ROTATING_KEYS],
  edge_redis_over_bare_proxy_1000_keys: ['edge-redis', ROTATING_KEYS, 'bare-proxy', ROTATING_KEYS],
  edge_redis_over_bare_proxy_one_key: ['edge-redis', 1, 'bare-proxy', ROTATING_KEYS],
  edge_redis_over_fastify_redis_1000_keys: ['edge-redis', ROTATING_KEYS, 'fastify-redis', ROTATING_KEYS],
  edge_redis_over_fastify_redis_one_key: ['edge-redis', 1, 'fastify-redis', 1],
  edge_memory_inflight_over_edge_memory_1000_keys: [
    'edge-memory-inflight',
    ROTATING_KEYS,
    'edge-memory',
    ROTATING_KEYS,
  ],
  edge_redis_inflight_over_edge_redis_1000_keys: ['edge-redis-inflight', ROTATING_KEYS, 'edge-redis', ROTATING_KEYS],
  edge_redis_inflight_over_edge_redis_one_key: ['edge-redis-inflight', 1, 'edge-redis', 1],
  edge_redis_warn_over_info_1000_keys: ['edge-redis-warn', ROTATING_KEYS, 'edge-redis', ROTATING_KEYS],
  edge_redis_alt_over_edge_redis_1000_keys: ['edge-redis-alt', ROTATING_KEYS, 'edge-redis', ROTATING_KEYS],
  edge_workers_n_over_1_1000_keys: ['edge-workers-n', ROTATING_KEYS, 'edge-workers-1', ROTATING_KEYS],
} as const satisfies Record<string, readonly [TargetName, number, TargetName, number]>;
type PairName = keyof typeof PAIRS;

/** Prints the ratios, the verdicts against the targets and the notes on the machine; returns them for the JSON. */
export function printVerdicts(results: readonly Row[]) {
  const { ratios, perCpu: perCpuRatios, perRound: ratioRounds, perCpuRound } = pairRatios(PAIRS, results);
  const line = (title: string, name: PairName) =>
    console.log(
      `${title.padEnd(44)} ${showRatio(ratios[name])} 2xx/s, ${showRatio(perCpuRatios[name])} per CPU-second` +
        (ROUNDS > 1
          ? `; rounds ${ratioRounds[name].map(showRatio).join(' ')} (per CPU-second ${perCpuRound[name].map(showRatio).join(' ')})`
          : ''),
    );
  line('edge-memory / direct, 1,000 keys:', 'edge_memory_over_direct_1000_keys');
  line('edge-memory / direct, one key:', 'edge_memory_over_direct_one_key');
  line('edge-redis / bare-proxy, 1,000 keys:', 'edge_redis_over_bare_proxy_1000_keys');
  line('edge-redis / bare-proxy, one key:', 'edge_redis_over_bare_proxy_one_key');
  line('edge-redis / fastify-redis, 1,000 keys:', 'edge_redis_over_fastify_redis_1000_keys');
  line('edge-redis / fastify-redis, one key:', 'edge_redis_over_fastify_redis_one_key');
  line('edge-memory + in-flight guard / without, 1,000 keys:', 'edge_memory_inflight_over_edge_memory_1000_keys');
  line('edge-redis + in-flight guard / without, 1,000 keys:', 'edge_redis_inflight_over_edge_redis_1000_keys');
  line('edge-redis + in-flight guard / without, one key:', 'edge_redis_inflight_over_edge_redis_one_key');
  line('edge-redis LOG_LEVEL warn / info, 1,000 keys:', 'edge_redis_warn_over_info_1000_keys');
  if (ALT_ROOT) line(`edge-redis ${ALT_ROOT} / this tree, 1,000 keys:`, 'edge_redis_alt_over_edge_redis_1000_keys');
  line(`edge-redis WORKERS=${WORKERS_N} / WORKERS=1, 1,000 keys:`, 'edge_workers_n_over_1_1000_keys');

  const headline = results.find((r) => r.scenario === 'edge-redis' && r.keys === ROTATING_KEYS);
  const headRatio = ratios.edge_redis_over_fastify_redis_1000_keys;
  const bareRatio = ratios.edge_redis_over_bare_proxy_1000_keys;
  const pass = {
    bare_ratio: bareRatio === null ? null : bareRatio >= TARGET_BARE_RATIO,
    ratio: headRatio === null ? null : headRatio >= TARGET_RATIO,
    // Side by side, a request waits for the other processes on the core: its latency says nothing of the edge's.
    p99: headline && !SIDE_BY_SIDE ? headline.p99_ms <= TARGET_P99_MS : null,
    errors: headline ? headline.errors === 0 && headline.non2xx === 0 : null,
  };
  const verdict = (ok: boolean | null) => (ok === null ? 'SKIP' : ok ? 'PASS' : 'FAIL');
  console.log(
    `${verdict(pass.bare_ratio)} edge with Redis buckets and its request log on at >= ${TARGET_BARE_RATIO}x the bare proxy, ` +
      `2xx/s, 1,000 keys (${showRatio(bareRatio)}; ${showRatio(perCpuRatios.edge_redis_over_bare_proxy_1000_keys)} per CPU-second)`,
  );
  console.log(
    `${verdict(pass.ratio)} edge-redis >= ${TARGET_RATIO}x fastify-redis 2xx/s, 1,000 keys (${showRatio(headRatio)})`,
  );
  console.log(
    `${verdict(pass.p99)} edge-redis p99 <= ${TARGET_P99_MS} ms, 1,000 keys (${headline?.p99_ms ?? 'n/a'} ms${SIDE_BY_SIDE ? ', side by side: not judged' : ''})`,
  );
  console.log(
    `${verdict(pass.errors)} edge-redis zero errors, 1,000 keys (${headline ? `${headline.errors} connection errors/timeouts, ${headline.non2xx} non-2xx` : 'n/a'})`,
  );
  for (const note of machineNotes(results, { sideBySide: SIDE_BY_SIDE })) console.log(note);
  return { ratios, perCpuRatios, ratioRounds, perCpuRound, pass };
}

/**
 * Summarises and prints the profile of each profiled target, over its measured runs only. Call once the children
 * have stopped: a profile is written when its process exits.
 */
export function printProfiles(
  profileDir: string | null,
  rounds: readonly (readonly Measured[])[],
): Record<string, ProfileSummary & { file: string }> {
  const profiles: Record<string, ProfileSummary & { file: string }> = {};
  for (const target of profileDir ? PROFILE : []) {
    const file = mainThreadProfile(join(profileDir!, target));
    if (!file) {
      console.log(`profile of ${target}: none written (did it exit cleanly?)`);
      continue;
    }
    const index = SCENARIOS.flatMap((s, i) => (s.target === target ? [i] : []));
    const summary = {
      file,
      ...summarise(
        file,
        40,
        rounds.flatMap((round) => index.map((i) => round[i]!.window_us)),
      ),
    };
    profiles[target] = summary;
    const requests = rounds.reduce((n, round) => n + index.reduce((k, i) => k + round[i]!.requests, 0), 0);
    console.log(
      `profile of ${target}: ${file}\n  ${summary.totalMs} ms busy, ${summary.idleMs} ms idle` +
        (summary.windowed
          ? `, measured runs only (${requests} requests: ${Math.round((summary.totalMs * 1000) / requests)} µs CPU per request)`
          : ', whole life of the process') +
        '. Self time by area:',
    );
    console.table(summary.areas.slice(0, 15).map((a) => ({ area: a.fn, 'self ms': a.ms, '%': a.percent })));
    console.log('  Top functions by self time:');
    console.table(
      summary.functions.slice(0, 30).map((f) => ({ function: f.fn, where: f.where, 'self ms': f.ms, '%': f.percent })),
    );
  }
  return profiles;
}

export interface EdgeRun {
  readonly pinning: readonly [number, number] | null;
  readonly proxyCpu: number | null;
  readonly loadCpu: number | null;
  /** Where the workers targets ran: their CPUs and the load generator's, null = not pinned. */
  readonly workersCpus: { readonly edgeCpus: string | null; readonly loadCpu: number | string | null };
  readonly upstreamBody: Buffer;
  /** Set when a scenario used Redis. */
  readonly redis: {
    readonly url: string;
    /** True when the run started its own Redis, pinned beside the load generator. */
    readonly private: boolean;
    readonly pid: number | null;
    readonly keysLeft: Record<string, number>;
    readonly keysDeleted: Record<string, number>;
  } | null;
  readonly results: readonly Row[];
  readonly verdicts: ReturnType<typeof printVerdicts>;
  readonly profiles: Record<string, ProfileSummary & { file: string }>;
}

export function writeResult(run: EdgeRun): void {
  const { pinning, verdicts } = run;
  const date = new Date().toISOString();
  const result = {
    benchmark: 'edge',
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    cpus: cpus().length,
    load_avg_1m: Number(loadavg()[0]!.toFixed(2)),
    date,
    quick: QUICK,
    pinned: pinning ? { proxy_cpu: run.proxyCpu, loadgen_cpu: run.loadCpu } : false,
    seconds: SECONDS,
    warmup_seconds: WARMUP_SECONDS,
    first_warmup_seconds: FIRST_WARMUP_SECONDS,
    rounds: ROUNDS,
    side_by_side: SIDE_BY_SIDE,
    connections: CONNECTIONS,
    rotating_keys: ROTATING_KEYS,
    edge_fail_mode: FAIL_MODE,
    edge_store_timeout_ms: STORE_TIMEOUT_MS ? Number(STORE_TIMEOUT_MS) : 'default',
    upstream_body_bytes: run.upstreamBody.length,
    limits: { one_key: ONE_KEY, rotating: ROTATING },
    edge_alt: ALT_ROOT,
    workers_n: WORKERS_N,
    workers_pinned: run.workersCpus,
    redis: run.redis
      ? {
          url: run.redis.url.replace(/\/\/[^@]*@/, '//'),
          private: run.redis.private,
          pid_visible: run.redis.pid !== null,
          keys_left_at_end: run.redis.keysLeft,
          keys_deleted: run.redis.keysDeleted,
        }
      : null,
    profiled: PROFILE,
    scenarios: run.results,
    ratios: verdicts.ratios,
    ratios_per_cpu_second: verdicts.perCpuRatios,
    ratio_rounds: verdicts.ratioRounds,
    ratio_rounds_per_cpu_second: verdicts.perCpuRound,
    targets: {
      edge_redis_over_bare_proxy_1000_keys: TARGET_BARE_RATIO,
      edge_redis_over_fastify_redis_1000_keys: TARGET_RATIO,
      p99_ms: TARGET_P99_MS,
      errors: 0,
    },
    pass: verdicts.pass,
    profiles: run.profiles,
  };
  mkdirSync(RESULTS, { recursive: true });
  const json = JSON.stringify(result, null, 2) + '\n';
  const out = join(RESULTS, `edge-${date.replaceAll(':', '-')}.json`);
  writeFileSync(out, json);
  writeFileSync(join(RESULTS, 'edge-latest.json'), json);
  console.log(`results: ${out}`);
}
