/**
 * What the extra hop to a deployment's own process costs: requests per second through the edge to the Agent Server
 * in the gateway's process (the default deployment, `{edge}/ok`) against the same Agent Server running as its own
 * process behind the edge (`{edge}/deployments/{id}/ok`, routed by the deployment route table), in the same run, as a
 * ratio; and that process alone, without the edge, for reference. Correctness first: every target must answer 200 with
 * the Agent Server's body (and an unknown deployment 404), or the run exits 1 before anything is timed.
 *
 *   npm run bench:deployments                  10 s per scenario (BENCH_SECONDS), 2 s warm-up
 *   BENCH_QUICK=1 npm run bench:deployments    smoke test: 2 s per scenario
 *   BENCH_ROUNDS=3 npm run bench:deployments
 *
 * The gateway runs as `npm start` runs it, on Redis (BENCH_REDIS_URL, default redis://127.0.0.1:6379): the run writes
 * the deployment's route into the Redis route table the gateway reads, as the control plane would. Every key the run
 * writes has a prefix of its own, deleted at the end (SCAN + UNLINK; the shared Redis is never flushed). When taskset
 * exists, the gateway and the deployment's process share the first CPU (the same one core as the in-process case:
 * the comparison is of the hop, not of an extra core), the load generator the second. See bench/README.md.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { RedisRouteTable } from '../src/routing/redis-route-table.ts';
import { get } from './peers/checks.ts';
import {
  benchRules,
  CONNECTIONS,
  FIRST_WARMUP_SECONDS,
  QUICK,
  REDIS_URL,
  RESULTS,
  ROOT,
  ROTATING_KEYS,
  ROUNDS,
  runId,
  SECONDS,
  WARMUP_SECONDS,
} from './peers/edge-settings.ts';
import { measure, type Measured } from './peers/measure.ts';
import { freePort, pinningCpus, pinSelf, startService, stopAll, type Service } from './peers/processes.ts';
import { deleteKeys, redisPid as findRedisPid } from './peers/redis-keys.ts';
import { pairRatios, printTable, scenarioRow, showRatio } from './peers/report.ts';
import { exitPaths } from './peers/exit-paths.ts';

process.chdir(ROOT);
const pinning = pinningCpus();
const [proxyCpu, loadCpu] = pinning ?? [null, null];
if (loadCpu !== null) pinSelf(loadCpu);

const PATH = '/ok';
/** Every Redis key of this run starts with one of these. */
const prefix = `bench-${runId}-deploy`;
const keyPrefix = `bd-${runId}`.slice(0, 32);
const patterns = [`${prefix}*`, `${keyPrefix}:*`];
const deploymentId = randomUUID();
const tmp = mkdtempSync(join(tmpdir(), 'gateway-bench-deployments-'));
writeFileSync(join(tmp, 'us.yaml'), benchRules(readFileSync(join(ROOT, 'rules', 'us.yaml'), 'utf8')));
const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false });
let table: RedisRouteTable | null = null;

async function cleanup(): Promise<Record<string, number>> {
  await stopAll();
  await table?.close();
  const deleted: Record<string, number> = {};
  if (redis.status === 'ready') {
    for (const p of patterns) deleted[p] = await deleteKeys(redis, p);
    await redis.quit();
  }
  rmSync(tmp, { recursive: true, force: true });
  return deleted;
}

const abort = exitPaths(
  cleanup,
  ROUNDS * 3 * ((WARMUP_SECONDS + SECONDS) * 1000 + 20_000) + FIRST_WARMUP_SECONDS * 3000 + 120_000,
);

let redisPid: number | null = null;
try {
  await redis.connect();
  redisPid = await findRedisPid(redis);
} catch (err) {
  await abort(
    `FAIL Redis at ${REDIS_URL} is not reachable (${(err as Error).message}); start it or set BENCH_REDIS_URL`,
  );
}

// ---- processes ---------------------------------------------------------------

const base = { ...process.env };
for (const name of ['REDIS_CLUSTER_NODES', 'TRUST_PROXY', 'AGENT_SERVER_URL', 'CONTROL_PLANE_URL']) delete base[name];
const startFlags =
  /^node (.*?)\s*bin\/gateway\.js start$/
    .exec((JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } }).scripts.start)?.[1]
    ?.split(/\s+/)
    .filter(Boolean) ?? [];
let gateway: Service, deployment: Service;
try {
  gateway = await startService(
    'gateway',
    [...startFlags, 'bin/gateway.js', 'start'],
    {
      ...base,
      PORT: '0',
      ADMIN_PORT: '0',
      REGION: 'us',
      RULES_DIR: tmp,
      LOG_LEVEL: 'info',
      REDIS_URL,
      KEY_PREFIX: keyPrefix,
      ROUTES_PREFIX: `${prefix}-routes`,
      API_KEYS_PREFIX: `${prefix}-keys`,
      CONTROL_PLANE_PREFIX: `${prefix}-cp`,
      AGENT_STORE_PREFIX: `${prefix}-agent`,
      IDENTITY_SECRET: randomBytes(24).toString('base64url'),
      // The load's 1,000 keys are made up: counted as keys (as the edge benchmark's), not refused as unknown.
      KEY_CHECK: 'off',
      FAIL_MODE: 'closed',
    },
    proxyCpu,
  );
  // The Agent Server alone (its own process, as a deployment's revision runs), the same app as the default one.
  const port = await freePort();
  deployment = await startService(
    'deployment',
    ['--import', 'tsx', 'src/services/agent-server/main.ts'],
    { ...base, AGENT_SERVER_PORT: String(port), AGENT_SERVER_API_KEYS: randomBytes(24).toString('base64url') },
    proxyCpu,
    port,
  );
  table = new RedisRouteTable(new Redis(REDIS_URL, { maxRetriesPerRequest: 1 }), {
    prefix: `${prefix}-routes:us`,
    ownsClient: true,
  });
  await table.set({ deploymentId, revisionId: 'bench', tenantId: 'bench', target: deployment.url });
} catch (err) {
  await abort(`FAIL could not start the processes: ${(err as Error).message}`);
}

// ---- correctness first -------------------------------------------------------

type Target = 'in-process' | 'deployment-process' | 'deployment-alone';
const LABELS: Record<Target, string> = {
  'in-process': 'edge → Agent Server in its process (/ok)',
  'deployment-process': 'edge → deployment process (/deployments/{id}/ok)',
  'deployment-alone': 'deployment process alone (/ok)',
};
const targets: Record<Target, { url: string; path: string; pid: number; upstream: number | null }> = {
  'in-process': { url: gateway!.url, path: PATH, pid: gateway!.pid, upstream: null },
  'deployment-process': {
    url: gateway!.url,
    path: `/deployments/${deploymentId}${PATH}`,
    pid: gateway!.pid,
    upstream: deployment!.pid,
  },
  'deployment-alone': { url: deployment!.url, path: PATH, pid: deployment!.pid, upstream: null },
};
const problems: string[] = [];
const reference = await get(`${deployment!.url}${PATH}`);
for (const [name, t] of Object.entries(targets)) {
  // The route reaches the gateway through Redis within a second; a few tries allow for that.
  let reply = await get(`${t.url}${t.path}`, { 'x-api-key': 'check' });
  for (let i = 0; i < 20 && reply.status !== 200; i++) {
    await new Promise((r) => setTimeout(r, 100));
    reply = await get(`${t.url}${t.path}`, { 'x-api-key': 'check' });
  }
  if (reply.status !== 200 || !reply.body.equals(reference.body))
    problems.push(`${name}: ${reply.status} ${reply.body.toString().slice(0, 200)}`);
  if (name !== 'deployment-alone' && reply.headers['ratelimit'] === undefined)
    problems.push(`${name}: no RateLimit header (not counted by the rules)`);
}
const unknown = await get(`${gateway!.url}/deployments/${randomUUID()}${PATH}`);
if (unknown.status !== 404) problems.push(`an unknown deployment answered ${unknown.status}, not 404`);
if (problems.length > 0) await abort(`FAIL correctness, nothing timed:\n${problems.join('\n')}`);
console.log(
  `correctness: the three targets answer 200 with the Agent Server's body ${reference.body.toString()}; an unknown deployment 404`,
);

// ---- timing ------------------------------------------------------------------

console.log(
  `3 scenarios × ${ROUNDS} round(s), ${SECONDS} s each after ${WARMUP_SECONDS} s warm-up (+${FIRST_WARMUP_SECONDS} s the first time per target), ${CONNECTIONS} connections, ${ROTATING_KEYS} keys; ` +
    (pinning
      ? `pinned: gateway and deployment process on CPU ${proxyCpu}, load generator on CPU ${loadCpu}`
      : 'NOT pinned (no taskset or fewer than 2 CPUs)'),
);
const order: Target[] = ['in-process', 'deployment-process', 'deployment-alone'];
const rounds: Measured[][] = [];
const warmed = new Set<Target>();
try {
  for (let r = 0; r < ROUNDS; r++) {
    const round: Measured[] = [];
    for (const name of order) {
      const t = targets[name];
      const m = await measure({
        spec: {
          url: t.url,
          path: t.path,
          connections: CONNECTIONS,
          warmupSeconds: WARMUP_SECONDS + (warmed.has(name) ? 0 : FIRST_WARMUP_SECONDS),
          seconds: SECONDS,
          keys: ROTATING_KEYS,
          keyPrefix: `bench-${runId}-${name}`,
        },
        pids: { proxy: t.pid, upstream: t.upstream, redis: redisPid },
        proxyCpu,
        loadCpu,
      });
      warmed.add(name);
      console.log(`  ${LABELS[name]}: ${Math.round(m.rps_mean)} req/s, p99 ${m.latency_ms.p99} ms`);
      round.push(m);
    }
    rounds.push(round);
  }
} catch (err) {
  await abort(`FAIL ${(err as Error).message}\n${gateway!.stderrTail()}\n${deployment!.stderrTail()}`);
}

// ---- report ------------------------------------------------------------------

const results = order.map((name, i) =>
  scenarioRow(
    name,
    LABELS[name],
    ROTATING_KEYS,
    rounds.map((round) => round[i]!),
  ),
);
printTable(results);
const pairs = {
  deployment_process_over_in_process: ['deployment-process', ROTATING_KEYS, 'in-process', ROTATING_KEYS],
} as const;
const { ratios, perRound } = pairRatios(pairs, results);
const row = (name: Target) => results.find((r) => r.scenario === name)!;
const cpuPerRequest = (name: Target) => {
  const r = row(name);
  const cpu = (r.proxy_cpu_percent ?? NaN) + (r.upstream_cpu_percent ?? 0);
  return r.rps > 0 && Number.isFinite(cpu) ? Math.round((cpu / 100 / r.rps) * 1e6 * 10) / 10 : null;
};
const cpuUs = { 'in-process': cpuPerRequest('in-process'), 'deployment-process': cpuPerRequest('deployment-process') };
console.log(
  `deployment process ÷ in-process, req/s: ${showRatio(ratios.deployment_process_over_in_process)} ` +
    `(rounds: ${perRound.deployment_process_over_in_process.join(', ')}); CPU per request (gateway + deployment): ` +
    `${cpuUs['deployment-process'] ?? 'n/a'} µs vs ${cpuUs['in-process'] ?? 'n/a'} µs in process`,
);

const deleted = await cleanup();
const date = new Date().toISOString();
const json =
  JSON.stringify(
    {
      benchmark: 'deployments',
      node: process.version,
      cpu: cpus()[0]?.model ?? 'unknown',
      cpus: cpus().length,
      load_avg_1m: Number(loadavg()[0]!.toFixed(2)),
      date,
      quick: QUICK,
      pinned: pinning ? { gateway_and_deployment_cpu: proxyCpu, loadgen_cpu: loadCpu } : false,
      seconds: SECONDS,
      warmup_seconds: WARMUP_SECONDS,
      first_warmup_seconds: FIRST_WARMUP_SECONDS,
      rounds: ROUNDS,
      connections: CONNECTIONS,
      rotating_keys: ROTATING_KEYS,
      path: PATH,
      scenarios: results,
      ratios,
      ratio_rounds: perRound,
      cpu_us_per_request: cpuUs,
      redis: { keys_deleted: deleted },
    },
    null,
    2,
  ) + '\n';
mkdirSync(RESULTS, { recursive: true });
const out = join(RESULTS, `deployments-${date.replaceAll(':', '-')}.json`);
writeFileSync(out, json);
writeFileSync(join(RESULTS, 'deployments-latest.json'), json);
console.log(`results: ${out}`);
process.exit(0);
