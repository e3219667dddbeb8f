/**
 * The edge under load, against its baselines, in one run: a minimal upstream
 * alone (direct), a bare Node proxy to it (node:http + an undici Pool, no
 * features: the floor), the edge with the memory store, the edge with Redis, and
 * the fastify peer (fastify + @fastify/rate-limit on Redis + @fastify/http-proxy)
 * with the same limits; one key and 1,000 rotating keys each; then the edge
 * on Redis again with LOG_LEVEL=warn to show what per-request logging costs; the edge (memory, Redis) with an
 * in-flight guard on every request beside the same edge without; then the edge on Redis with WORKERS=1
 * and WORKERS=n side by side (bench/README.md says on which CPUs).
 * Correctness first: every target must answer 200 with the upstream's body
 * and its rate-limit headers, or the run exits 1 before anything is timed.
 * See bench/README.md.
 *
 *   npm run bench:edge                          10 s per scenario (BENCH_SECONDS), 2 s warm-up
 *   BENCH_QUICK=1 npm run bench:edge            smoke test: 2 s per scenario, short warm-ups
 *   BENCH_ROUNDS=3 BENCH_ONLY=edge-redis,fastify-redis npm run bench:edge
 *   BENCH_PROFILE=edge-redis,fastify-redis ...  --cpu-prof on those targets, top self time printed
 *   BENCH_EDGE_ALT=/path/to/other/checkout ...  also that tree's edge on Redis (edge-redis-alt), side by side
 *   BENCH_SIDE_BY_SIDE=1 BENCH_EDGE_ALT=... BENCH_ONLY=edge-redis,edge-redis-alt ...  both at once on one core
 *   BENCH_FAIL_MODE=open, BENCH_STORE_TIMEOUT_MS=1000   the edges' FAIL_MODE (default closed) and STORE_TIMEOUT_MS
 *
 * This file runs the benchmark; bench/peers/ holds its settings and scenarios (edge-settings.ts), the processes
 * (edge-targets.ts, processes.ts), the checks, the measurement and the report (edge-results.ts, report.ts).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { checkTargets } from './peers/checks.ts';
import {
  ALT_ROOT,
  CONNECTIONS,
  FIRST_WARMUP_SECONDS,
  LABELS,
  ONE_KEY,
  PROFILE,
  GIVEN_REDIS_URL,
  REDIS_URL,
  redisPatterns,
  ROOT,
  ROTATING,
  ROUNDS,
  runId,
  SCENARIOS,
  SECONDS,
  SIDE_BY_SIDE,
  WARMUP_SECONDS,
  benchRules,
  isWorkersTarget,
  usesRedis,
  type TargetName,
} from './peers/edge-settings.ts';
import { printProfiles, printVerdicts, writeResult } from './peers/edge-results.ts';
import { startTargets } from './peers/edge-targets.ts';
import { measure, type Measured } from './peers/measure.ts';
import { printTable, scenarioRow } from './peers/report.ts';
import { pinningCpus, pinSelf, stopAll, workersPinning, type Service } from './peers/processes.ts';
import { countKeys, deleteKeys, redisPid as findRedisPid } from './peers/redis-keys.ts';
import { exitPaths } from './peers/exit-paths.ts';
import { startPrivateRedis } from './peers/private-redis.ts';

// ---- setup -----------------------------------------------------------------

process.chdir(ROOT); // the children are started with paths relative to the repository
if (SIDE_BY_SIDE && SCENARIOS.some((s) => s.target === 'direct' || isWorkersTarget(s.target))) {
  console.error(
    'FAIL BENCH_SIDE_BY_SIDE runs the proxies together on one core: leave out direct and the workers targets (BENCH_ONLY)',
  );
  process.exit(1);
}
const pinning = pinningCpus();
const [proxyCpu, loadCpu] = pinning ?? [null, null];
const workersCpus = workersPinning();
// This runner drains the servers' stdout; it shares the load generator's core, not the proxy's.
if (loadCpu !== null) pinSelf(loadCpu);

const tmp = mkdtempSync(join(tmpdir(), 'gateway-bench-'));
writeFileSync(join(tmp, 'us.yaml'), benchRules(readFileSync(join(ROOT, 'rules', 'us.yaml'), 'utf8')));
// The `-inflight` targets: the same file plus an in-flight guard on every request (IN_FLIGHT_GUARD).
const inFlightRulesDir = join(tmp, 'in-flight');
mkdirSync(inFlightRulesDir);
writeFileSync(
  join(inFlightRulesDir, 'us.yaml'),
  benchRules(readFileSync(join(ROOT, 'rules', 'us.yaml'), 'utf8'), true),
);
// The other checkout is measured with its own rule file (in the form its loader reads).
const altRulesDir = ALT_ROOT ? join(tmp, 'alt') : tmp;
if (ALT_ROOT) {
  mkdirSync(altRulesDir);
  writeFileSync(join(altRulesDir, 'us.yaml'), benchRules(readFileSync(join(ALT_ROOT, 'rules', 'us.yaml'), 'utf8')));
}
const profileDir = PROFILE.length > 0 ? mkdtempSync(join(tmpdir(), 'gateway-bench-profile-')) : null;
/** `node --cpu-prof` flags for a target that is profiled, each into its own folder. */
const profileFlags = (target: TargetName) =>
  profileDir && PROFILE.includes(target) ? ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, target)}`] : [];

const needsRedis = SCENARIOS.some((s) => usesRedis(s.target));
const privateRedis = needsRedis && GIVEN_REDIS_URL === undefined ? await startPrivateRedis(loadCpu) : null;
const redisUrl = privateRedis?.url ?? REDIS_URL;
const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false });
let redisPid: number | null = null;
let cleaned = false;

/**
 * Stops every child, deletes this run's Redis keys, removes the temporary rules; returns the keys deleted per pattern.
 */
async function cleanup(): Promise<Record<string, number>> {
  await stopAll();
  const deleted: Record<string, number> = {};
  if (!cleaned && redis.status === 'ready') {
    cleaned = true;
    for (const pattern of redisPatterns) deleted[pattern] = await deleteKeys(redis, pattern);
    await redis.quit();
  }
  await privateRedis?.stop();
  rmSync(tmp, { recursive: true, force: true });
  return deleted;
}

const abort = exitPaths(
  cleanup,
  ROUNDS * SCENARIOS.length * ((WARMUP_SECONDS + SECONDS) * 1000 + 20_000) + FIRST_WARMUP_SECONDS * 9000 + 120_000,
);

if (needsRedis) {
  try {
    await redis.connect();
    redisPid = await findRedisPid(redis);
  } catch (err) {
    await abort(
      `FAIL Redis at ${redisUrl} is not reachable (${(err as Error).message}); start it or set BENCH_REDIS_URL`,
    );
  }
}

let upstream: Service | undefined;
let services = new Map<TargetName, Service>();
try {
  ({ upstream, services } = await startTargets({
    rulesDir: tmp,
    inFlightRulesDir,
    altRulesDir,
    profileFlags,
    proxyCpu,
    loadCpu,
    workersCpus: workersCpus.edgeCpus,
    redisUrl,
  }));
} catch (err) {
  await abort(`FAIL could not start the processes: ${(err as Error).message}`);
}

// ---- correctness first -------------------------------------------------------

const checkKey = `check-${runId}`;
const { problems, upstreamBody } = await checkTargets(
  upstream!.url,
  services,
  [ONE_KEY, ROTATING],
  ROTATING,
  redis,
  checkKey,
);
if (problems.length > 0) await abort(`FAIL correctness, nothing timed:\n${problems.join('\n')}`);
console.log(
  `correctness: ${[...services.keys()].join(', ')} answer 200 with the upstream's body (and the limiters their rate-limit headers)`,
);

// ---- timing ------------------------------------------------------------------

console.log(
  `${SCENARIOS.length} scenarios × ${ROUNDS} round(s), ${SECONDS} s each after ${WARMUP_SECONDS} s warm-up (+${FIRST_WARMUP_SECONDS} s the first time per process), ${CONNECTIONS} connections; ` +
    (SIDE_BY_SIDE ? 'side by side (same keys at the same time, sharing the tested core); ' : '') +
    (pinning
      ? `pinned with taskset: process under test on CPU ${proxyCpu}, load generator + upstream + this runner${privateRedis ? ' + Redis (private)' : ''} on CPU ${loadCpu}`
      : 'NOT pinned (no taskset or fewer than 2 CPUs)') +
    (SCENARIOS.some((s) => isWorkersTarget(s.target))
      ? `; the WORKERS targets on CPUs ${workersCpus.edgeCpus ?? 'any'}, the load generator on ${workersCpus.loadCpu ?? 'any'}${workersCpus.edgeCpus === workersCpus.loadCpu ? ' (fewer than 3 CPUs: it competes with the workers)' : ''}, their CPU share summed over the primary and its workers`
      : '') +
    (PROFILE.length > 0 ? `; under --cpu-prof: ${PROFILE.join(', ')} (their figures are lower than unprofiled)` : ''),
);
const warmed = new Set<TargetName>();
/** Measures scenario `i` (its own load generator, started now). */
async function measureScenario(i: number): Promise<Measured> {
  const { target, keys } = SCENARIOS[i]!;
  const service = services.get(target)!;
  const m = await measure({
    spec: {
      url: service.url,
      path: (keys === 1 ? ONE_KEY : ROTATING).path,
      connections: CONNECTIONS,
      warmupSeconds: WARMUP_SECONDS + (warmed.has(target) ? 0 : FIRST_WARMUP_SECONDS),
      seconds: SECONDS,
      keys,
      keyPrefix: `bench-${runId}-${target}-${keys}`,
    },
    pids: { proxy: service.pid, upstream: target === 'direct' ? null : upstream!.pid, redis: redisPid },
    ...(isWorkersTarget(target)
      ? { proxyTree: true, proxyCpu: null, loadCpu: workersCpus.loadCpu }
      : { proxyCpu, loadCpu }),
  });
  warmed.add(target);
  console.log(
    `  ${LABELS[target]}, ${keys === 1 ? 'one key' : `${keys} keys`}: ${Math.round(m.rps_mean)} req/s, p99 ${m.latency_ms.p99} ms`,
  );
  return m;
}
/** Scenarios measured together: one at a time, or side by side those with the same keys. */
const groups: number[][] = [];
SCENARIOS.forEach(({ keys }, i) => {
  const group = SIDE_BY_SIDE ? groups.find((g) => SCENARIOS[g[0]!]!.keys === keys) : undefined;
  if (group) group.push(i);
  else groups.push([i]);
});
const rounds: Measured[][] = [];
try {
  for (let r = 0; r < ROUNDS; r++) {
    const round: Measured[] = [];
    for (const group of groups) {
      const measured = await Promise.all(group.map(measureScenario));
      group.forEach((i, j) => (round[i] = measured[j]!));
    }
    rounds.push(round);
  }
} catch (err) {
  await abort(
    `FAIL ${(err as Error).message}\n${[...services.values()].map((s) => `${s.name}: ${s.stderrTail()}`).join('\n')}`,
  );
}

// ---- report ------------------------------------------------------------------

const results = SCENARIOS.map(({ target, keys }, i) =>
  scenarioRow(
    target,
    LABELS[target],
    keys,
    rounds.map((round) => round[i]!),
  ),
);
printTable(results);
const verdicts = printVerdicts(results);

const redisKeys: Record<string, number> = {};
if (redis.status === 'ready') for (const pattern of redisPatterns) redisKeys[pattern] = await countKeys(redis, pattern);
const deleted = await cleanup(); // stops the children first: a profile is written when its process exits
const profiles = printProfiles(profileDir, rounds);

writeResult({
  pinning,
  proxyCpu,
  loadCpu,
  workersCpus,
  upstreamBody,
  redis: needsRedis
    ? { url: redisUrl, private: privateRedis !== null, pid: redisPid, keysLeft: redisKeys, keysDeleted: deleted }
    : null,
  results,
  verdicts,
  profiles,
});
process.exit(0);
