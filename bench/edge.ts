/**
 * The edge under load, against its baselines, in one run: a minimal upstream
 * alone (direct), the edge with the memory store, the edge with Redis, and
 * the fastify peer (fastify + @fastify/rate-limit on Redis + @fastify/http-proxy)
 * with the same limits; one key and 1,000 rotating keys each; then the edge
 * on Redis again with LOG_LEVEL=warn to show what per-request logging costs.
 * Correctness first: every target must answer 200 with the upstream's body
 * and its rate-limit headers, or the run exits 1 before anything is timed.
 * See bench/README.md.
 *
 *   npm run bench:edge                          10 s per scenario (BENCH_SECONDS), 2 s warm-up
 *   BENCH_QUICK=1 npm run bench:edge            smoke test: 2 s per scenario, short warm-ups
 *   BENCH_ROUNDS=3 BENCH_ONLY=edge-redis,fastify-redis npm run bench:edge
 *   BENCH_PROFILE=edge-redis,fastify-redis ...  --cpu-prof on those targets, top self time printed
 *   BENCH_EDGE_ALT=/path/to/other/checkout ...  also that tree's edge on Redis (edge-redis-alt), side by side
 *   BENCH_FAIL_MODE=open, BENCH_STORE_TIMEOUT_MS=1000   the edges' FAIL_MODE (default closed) and STORE_TIMEOUT_MS
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { checkPath, countsInRedis, get, type Flavour, type LimitedPath } from './peers/checks.ts';
import { mainThreadProfile, summarise, type ProfileSummary } from './peers/cpu-profile.ts';
import { measure, type Measured } from './peers/measure.ts';
import { machineNotes, pairRatios, printTable, scenarioRow, showRatio } from './peers/report.ts';
import { freePort, pinningCpus, pinSelf, startService, stopAll, type Service } from './peers/processes.ts';
import { countKeys, deleteKeys, redisPid as findRedisPid } from './peers/redis-keys.ts';

const QUICK = process.env.BENCH_QUICK === '1' || process.argv.includes('--quick');
const SECONDS = Number(process.env.BENCH_SECONDS ?? (QUICK ? 2 : 10));
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? (QUICK ? 0.5 : 2));
/**
 * Added to the first warm-up of each process: a fresh process loads code lazily and runs cold for seconds on a slow
 * machine.
 */
const FIRST_WARMUP_SECONDS = Number(process.env.BENCH_FIRST_WARMUP_SECONDS ?? (QUICK ? 2 : 10));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ROTATING_KEYS = 1000;
const FAIL_MODE = process.env.BENCH_FAIL_MODE ?? 'closed';
/** The edges' STORE_TIMEOUT_MS; unset = the edge's default. */
const STORE_TIMEOUT_MS = process.env.BENCH_STORE_TIMEOUT_MS;
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const ALT_ROOT = process.env.BENCH_EDGE_ALT ? resolve(process.env.BENCH_EDGE_ALT) : null;
const list = (v: string | undefined) =>
  v
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
const PROFILE = process.env.BENCH_PROFILE === '1' ? ['edge-redis'] : (list(process.env.BENCH_PROFILE) ?? []);
const ONLY = list(process.env.BENCH_ONLY);
const TARGET_RATIO = 1.3;
const TARGET_P99_MS = 10;
const ROOT = join(import.meta.dirname, '..');
const RESULTS = join(import.meta.dirname, 'results');

// ---- what is measured ------------------------------------------------------

/**
 * One key: a rule placed first in a copy of rules/us.yaml, with a count no run
 * can exhaust, so the single key is counted on every request but never denied.
 * Rotating keys: the real `default` rule (1000 per 10 s per key), reached after
 * every other rule is tried; 1,000 keys at under 100 req/s each stay below it.
 */
const ONE_KEY: LimitedPath = { path: '/bench/one-key', rule: 'bench-one-key', count: 100_000_000, perSeconds: 1 };
const ROTATING: LimitedPath = { path: '/some/path', rule: 'default', count: 1000, perSeconds: 10 };
const BENCH_RULE = `# Added by bench/edge.ts: the one-key benchmark path, limited but never denied.
- id: ${ONE_KEY.rule}
  match: { prefix: /bench }
  limits:
    - { by: api-key, count: ${ONE_KEY.count}, per: ${ONE_KEY.perSeconds}s, category: Benchmark }

`;

type TargetName = 'direct' | 'edge-memory' | 'edge-redis' | 'fastify-redis' | 'edge-redis-warn' | 'edge-redis-alt';
type EdgeTarget = Extract<TargetName, `edge-${string}`>;

const LABELS: Record<TargetName, string> = {
  direct: 'direct (upstream alone)',
  'edge-memory': 'edge, memory store',
  'edge-redis': 'edge, Redis',
  'fastify-redis': 'fastify peer, Redis',
  'edge-redis-warn': 'edge, Redis, LOG_LEVEL=warn',
  'edge-redis-alt': `edge, Redis, ${ALT_ROOT ?? ''}`,
};

const SCENARIOS: readonly { target: TargetName; keys: number }[] = (
  [
    { target: 'direct', keys: ROTATING_KEYS },
    { target: 'edge-memory', keys: 1 },
    { target: 'edge-memory', keys: ROTATING_KEYS },
    { target: 'edge-redis', keys: 1 },
    { target: 'edge-redis', keys: ROTATING_KEYS },
    ...(ALT_ROOT ? [{ target: 'edge-redis-alt', keys: ROTATING_KEYS } as const] : []),
    { target: 'fastify-redis', keys: 1 },
    { target: 'fastify-redis', keys: ROTATING_KEYS },
    { target: 'edge-redis-warn', keys: ROTATING_KEYS },
  ] as const
).filter((s) => !ONLY || ONLY.includes(s.target));
const runs = (target: TargetName) => SCENARIOS.some((s) => s.target === target);

const runId = `${Date.now().toString(36)}-${process.pid.toString(36)}`;
const edgePrefix = (t: EdgeTarget) => `bench-${runId}-${t.slice(5)}`;
const peerNamespace = `bench-${runId}-fastify-`;
const EDGE_TARGETS = ['edge-memory', 'edge-redis', 'edge-redis-warn', 'edge-redis-alt'] as const;
/** Redis key patterns this run writes, deleted at the end (SCAN + UNLINK; the shared Redis is never flushed). */
const redisPatterns = [
  ...EDGE_TARGETS.filter((t) => t !== 'edge-memory').map((t) => `${edgePrefix(t)}:*`),
  `${peerNamespace}*`,
];

// ---- setup -----------------------------------------------------------------

process.chdir(ROOT); // the children are started with paths relative to the repository
const pinning = pinningCpus();
const [proxyCpu, loadCpu] = pinning ?? [null, null];
// This runner drains the servers' stdout; it shares the load generator's core, not the proxy's.
if (loadCpu !== null) pinSelf(loadCpu);

const tmp = mkdtempSync(join(tmpdir(), 'gateway-bench-'));
writeFileSync(join(tmp, 'us.yaml'), BENCH_RULE + readFileSync(join(ROOT, 'rules', 'us.yaml'), 'utf8'));
const profileDir = PROFILE.length > 0 ? mkdtempSync(join(tmpdir(), 'gateway-bench-profile-')) : null;
/** `node --cpu-prof` flags for a target that is profiled, each into its own folder. */
const profileFlags = (target: TargetName) =>
  profileDir && PROFILE.includes(target) ? ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, target)}`] : [];

const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false });
const needsRedis = SCENARIOS.some((s) => s.target !== 'direct' && s.target !== 'edge-memory');
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
  rmSync(tmp, { recursive: true, force: true });
  return deleted;
}

async function abort(message: string, code = 1): Promise<never> {
  console.error(message);
  await cleanup().catch((err: unknown) => console.error(`cleanup: ${(err as Error).message}`));
  process.exit(code);
}

process.once('SIGINT', () => void abort('interrupted: children stopped, Redis keys deleted', 130));
const budgetMs =
  ROUNDS * SCENARIOS.length * ((WARMUP_SECONDS + SECONDS) * 1000 + 20_000) + FIRST_WARMUP_SECONDS * 6000 + 120_000;
setTimeout(
  () => void abort(`FAIL the run took longer than ${Math.round(budgetMs / 1000)} s: stopped`),
  budgetMs,
).unref();

if (needsRedis) {
  try {
    await redis.connect();
    redisPid = await findRedisPid(redis);
  } catch (err) {
    await abort(
      `FAIL Redis at ${REDIS_URL} is not reachable (${(err as Error).message}); start it or set BENCH_REDIS_URL`,
    );
  }
}

const tsx = ['--import', 'tsx'];
const services = new Map<TargetName, Service>();
async function startEdge(target: EdgeTarget, upstreamUrl: string): Promise<Service> {
  // At LOG_LEVEL=warn the edge does not log where it listens: give it a port and wait for it to accept.
  const port = target === 'edge-redis-warn' ? await freePort() : undefined;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port ?? 0),
    ADMIN_PORT: '0',
    REGION: 'us',
    RULES_DIR: tmp,
    LOG_LEVEL: target === 'edge-redis-warn' ? 'warn' : 'info',
    AGENT_SERVER_URL: upstreamUrl,
    CONTROL_PLANE_URL: upstreamUrl,
    KEY_PREFIX: edgePrefix(target),
    IDENTITY_SECRET: randomBytes(24).toString('base64url'),
    // closed: a store failure answers 503 and shows as non-2xx, instead of quietly falling back to memory buckets.
    FAIL_MODE,
  };
  for (const name of ['REDIS_URL', 'REDIS_CLUSTER_NODES', 'TRUST_PROXY', 'STORE_TIMEOUT_MS']) delete env[name];
  if (STORE_TIMEOUT_MS) env.STORE_TIMEOUT_MS = STORE_TIMEOUT_MS;
  if (target !== 'edge-memory') env.REDIS_URL = REDIS_URL;
  const root = target === 'edge-redis-alt' ? ALT_ROOT! : ROOT;
  return startService(
    target,
    [...startFlags(root), ...profileFlags(target), join(root, 'bin', 'gateway.js'), 'start'],
    env,
    proxyCpu,
    port,
  );
}

/**
 * The node flags `npm start` gives the gateway in that tree (package.json's start script): the edge is measured as it
 * is run.
 */
function startFlags(root: string): string[] {
  const start =
    (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts?: { start?: string } }).scripts?.start ??
    '';
  return /^node (.*?)\s*bin\/gateway\.js start$/.exec(start)?.[1]?.split(/\s+/).filter(Boolean) ?? [];
}

let upstream: Service | undefined;
try {
  upstream = await startService('upstream', [...tsx, 'bench/peers/upstream.ts'], process.env, loadCpu);
  if (runs('direct'))
    services.set(
      'direct',
      await startService('direct upstream', [...tsx, 'bench/peers/upstream.ts'], process.env, proxyCpu),
    );
  for (const target of EDGE_TARGETS) if (runs(target)) services.set(target, await startEdge(target, upstream.url));
  if (runs('fastify-redis')) {
    const routes = [
      { prefix: '/bench', max: ONE_KEY.count, windowMs: ONE_KEY.perSeconds * 1000 },
      { prefix: '/', max: ROTATING.count, windowMs: ROTATING.perSeconds * 1000 },
    ];
    const env = {
      ...process.env,
      PORT: '0',
      UPSTREAM_URL: upstream.url,
      REDIS_URL,
      PEER_NAMESPACE: peerNamespace,
      PEER_ROUTES: JSON.stringify(routes),
    };
    services.set(
      'fastify-redis',
      await startService(
        'fastify peer',
        [...profileFlags('fastify-redis'), ...tsx, 'bench/peers/fastify-proxy.ts'],
        env,
        proxyCpu,
      ),
    );
  }
} catch (err) {
  await abort(`FAIL could not start the processes: ${(err as Error).message}`);
}

// ---- correctness first -------------------------------------------------------

const problems: string[] = [];
const direct = await get(upstream!.url + ROTATING.path);
const upstreamBody = direct.body;
if (direct.status !== 200 || upstreamBody.length !== 100)
  problems.push(`upstream: ${direct.status}, ${upstreamBody.length} bytes (want 200, 100 bytes)`);
const checkKey = `check-${runId}`;
// A fresh process connects to Redis and loads its script on its first requests, which can take longer than the
// store budget (STORE_TIMEOUT_MS, 50 ms) on a slow or profiled run: a few unjudged requests first.
for (const service of services.values()) {
  for (const mode of [ONE_KEY, ROTATING]) {
    for (let i = 0; i < 5; i++) await get(service.url + mode.path, { 'x-api-key': checkKey }).catch(() => null);
  }
}
for (const [target, service] of services) {
  if (target === 'direct') continue;
  const flavour: Flavour = target === 'fastify-redis' ? 'fastify' : 'edge';
  for (const mode of [ONE_KEY, ROTATING]) {
    problems.push(
      ...(await checkPath(service.url, flavour, mode, checkKey, upstreamBody)).map((p) => `${target} ${p}`),
    );
  }
  if (target !== 'edge-memory')
    problems.push(...(await countsInRedis(redis, service.url, ROTATING, checkKey)).map((p) => `${target}: ${p}`));
}
if (problems.length > 0) await abort(`FAIL correctness, nothing timed:\n${problems.join('\n')}`);
console.log(
  `correctness: ${[...services.keys()].join(', ')} answer 200 with the upstream's body and their rate-limit headers`,
);

// ---- timing ------------------------------------------------------------------

console.log(
  `${SCENARIOS.length} scenarios × ${ROUNDS} round(s), ${SECONDS} s each after ${WARMUP_SECONDS} s warm-up (+${FIRST_WARMUP_SECONDS} s the first time per process), ${CONNECTIONS} connections; ` +
    (pinning
      ? `pinned with taskset: process under test on CPU ${proxyCpu}, load generator + upstream + this runner on CPU ${loadCpu}`
      : 'NOT pinned (no taskset or fewer than 2 CPUs)') +
    (PROFILE.length > 0 ? `; under --cpu-prof: ${PROFILE.join(', ')} (their figures are lower than unprofiled)` : ''),
);
const warmed = new Set<TargetName>();
const rounds: Measured[][] = [];
try {
  for (let r = 0; r < ROUNDS; r++) {
    const round: Measured[] = [];
    for (const { target, keys } of SCENARIOS) {
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
        proxyCpu,
        loadCpu,
      });
      warmed.add(target);
      console.log(
        `  ${LABELS[target]}, ${keys === 1 ? 'one key' : `${keys} keys`}: ${Math.round(m.rps_mean)} req/s, p99 ${m.latency_ms.p99} ms`,
      );
      round.push(m);
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

const PAIRS = {
  edge_memory_over_direct_1000_keys: ['edge-memory', ROTATING_KEYS, 'direct', ROTATING_KEYS],
  edge_memory_over_direct_one_key: ['edge-memory', 1, 'direct', ROTATING_KEYS],
  edge_redis_over_fastify_redis_1000_keys: ['edge-redis', ROTATING_KEYS, 'fastify-redis', ROTATING_KEYS],
  edge_redis_over_fastify_redis_one_key: ['edge-redis', 1, 'fastify-redis', 1],
  edge_redis_warn_over_info_1000_keys: ['edge-redis-warn', ROTATING_KEYS, 'edge-redis', ROTATING_KEYS],
  edge_redis_alt_over_edge_redis_1000_keys: ['edge-redis-alt', ROTATING_KEYS, 'edge-redis', ROTATING_KEYS],
} as const satisfies Record<string, readonly [TargetName, number, TargetName, number]>;
type PairName = keyof typeof PAIRS;
const { ratios, perCpu: perCpuRatios, perRound: ratioRounds } = pairRatios(PAIRS, results);
const line = (title: string, name: PairName) =>
  console.log(
    `${title.padEnd(44)} ${showRatio(ratios[name])} 2xx/s, ${showRatio(perCpuRatios[name])} per CPU-second` +
      (ROUNDS > 1 ? `; rounds ${ratioRounds[name].map(showRatio).join(' ')}` : ''),
  );
line('edge-memory / direct, 1,000 keys:', 'edge_memory_over_direct_1000_keys');
line('edge-memory / direct, one key:', 'edge_memory_over_direct_one_key');
line('edge-redis / fastify-redis, 1,000 keys:', 'edge_redis_over_fastify_redis_1000_keys');
line('edge-redis / fastify-redis, one key:', 'edge_redis_over_fastify_redis_one_key');
line('edge-redis LOG_LEVEL warn / info, 1,000 keys:', 'edge_redis_warn_over_info_1000_keys');
if (ALT_ROOT) line(`edge-redis ${ALT_ROOT} / this tree, 1,000 keys:`, 'edge_redis_alt_over_edge_redis_1000_keys');

const headline = results.find((r) => r.scenario === 'edge-redis' && r.keys === ROTATING_KEYS);
const headRatio = ratios.edge_redis_over_fastify_redis_1000_keys;
const pass = {
  ratio: headRatio === null ? null : headRatio >= TARGET_RATIO,
  p99: headline ? headline.p99_ms <= TARGET_P99_MS : null,
  errors: headline ? headline.errors === 0 && headline.non2xx === 0 : null,
};
const verdict = (ok: boolean | null) => (ok === null ? 'SKIP' : ok ? 'PASS' : 'FAIL');
console.log(
  `${verdict(pass.ratio)} edge-redis >= ${TARGET_RATIO}x fastify-redis 2xx/s, 1,000 keys (${showRatio(headRatio)})`,
);
console.log(`${verdict(pass.p99)} edge-redis p99 <= ${TARGET_P99_MS} ms, 1,000 keys (${headline?.p99_ms ?? 'n/a'} ms)`);
console.log(
  `${verdict(pass.errors)} edge-redis zero errors, 1,000 keys (${headline ? `${headline.errors} connection errors/timeouts, ${headline.non2xx} non-2xx` : 'n/a'})`,
);
for (const note of machineNotes(results)) console.log(note);

const redisKeys: Record<string, number> = {};
if (redis.status === 'ready') for (const pattern of redisPatterns) redisKeys[pattern] = await countKeys(redis, pattern);
const deleted = await cleanup(); // stops the children first: a profile is written when its process exits

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

const date = new Date().toISOString();
const result = {
  benchmark: 'edge',
  node: process.version,
  cpu: cpus()[0]?.model ?? 'unknown',
  cpus: cpus().length,
  load_avg_1m: Number(loadavg()[0]!.toFixed(2)),
  date,
  quick: QUICK,
  pinned: pinning ? { proxy_cpu: proxyCpu, loadgen_cpu: loadCpu } : false,
  seconds: SECONDS,
  warmup_seconds: WARMUP_SECONDS,
  first_warmup_seconds: FIRST_WARMUP_SECONDS,
  rounds: ROUNDS,
  connections: CONNECTIONS,
  rotating_keys: ROTATING_KEYS,
  edge_fail_mode: FAIL_MODE,
  edge_store_timeout_ms: STORE_TIMEOUT_MS ? Number(STORE_TIMEOUT_MS) : 'default',
  upstream_body_bytes: upstreamBody.length,
  limits: { one_key: ONE_KEY, rotating: ROTATING },
  edge_alt: ALT_ROOT,
  redis: needsRedis
    ? {
        url: REDIS_URL.replace(/\/\/[^@]*@/, '//'),
        pid_visible: redisPid !== null,
        keys_left_at_end: redisKeys,
        keys_deleted: deleted,
      }
    : null,
  profiled: PROFILE,
  scenarios: results,
  ratios,
  ratios_per_cpu_second: perCpuRatios,
  ratio_rounds: ratioRounds,
  targets: { edge_redis_over_fastify_redis_1000_keys: TARGET_RATIO, p99_ms: TARGET_P99_MS, errors: 0 },
  pass,
  profiles,
};
mkdirSync(RESULTS, { recursive: true });
const json = JSON.stringify(result, null, 2) + '\n';
const out = join(RESULTS, `edge-${date.replaceAll(':', '-')}.json`);
writeFileSync(out, json);
writeFileSync(join(RESULTS, 'edge-latest.json'), json);
console.log(`results: ${out}`);
process.exit(0);
