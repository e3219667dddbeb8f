/**
 * Soak: SOAK_SECONDS (default 60) of mixed traffic through a spawned edge
 * (`gateway start`, real rules/us.yaml) on the shared Redis, loopback only.
 * Reports the edge's memory (RSS and heap, read from its own /metrics) at
 * start, middle and end with the trend after warm-up; error counts; and the
 * decision accuracy of every bucket: admitted ÷ allowed by the bucket math.
 * Writes a table and bench/results/soak-<time>.json. See bench/README.md.
 *
 *   npm run soak                      60 s
 *   SOAK_SECONDS=20 npm run soak      shorter
 *
 * Traffic, one identity per request so each request maps to exactly one
 * bucket (checked with the compiled matcher before anything is sent):
 * - hot: a few identities per rule, each paced at 2-5× its refill rate, so
 *   their buckets empty early and then admit exactly their refill;
 * - cold: closed-loop workers walking a population of 100,000 identities
 *   (API keys, user ids with their IPs, bare IPs) across several rules.
 *
 * Redis keys carry a unique KEY_PREFIX and are deleted at the end (SCAN +
 * UNLINK); the database is never flushed.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Pool, WebSocket } from 'undici';
import { compile, identityOf, type MatchRequest } from '../src/rules/compile.ts';
import { loadRuleFile } from '../src/rules/load.ts';
import { freePort, startService, stopAll } from './peers/processes.ts';
import { countKeys, deleteKeys } from './peers/redis-keys.ts';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const IDENTITIES = Number(process.env.SOAK_IDENTITIES ?? 100_000);
const COLD_WORKERS = Number(process.env.SOAK_WORKERS ?? 16);
const REDIS_URL = process.env.SOAK_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** Samples before this share of the run are warm-up: JIT, pools, caches filling. */
const WARMUP_SHARE = 0.25;
const SAMPLE_MS = 2000;
const TARGET_ACCURACY = [0.99, 1.0] as const;
/** Largest growth allowed after warm-up (fitted line, start to end of the window, relative to its mean). */
const MAX_GROWTH = 0.1;
/**
 * Every this often the edge's heap is collected (full GC through its inspector) before a sample: the live heap, not
 * garbage.
 */
const GC_SAMPLE_MS = 10_000;
/** Entries per generation of the edge's identity-digest cache (`cachedBucketKeys` in src/limiter/bucket-key.ts). */
const DIGEST_CACHE_GENERATION = 50_000;
const ROOT = join(import.meta.dirname, '..');
const RESULTS = join(import.meta.dirname, 'results');

const runId = `${Date.now().toString(36)}-${process.pid.toString(36)}`;
const KEY_PREFIX = `soak-${runId}`;
const matcher = compile(loadRuleFile(join(ROOT, 'rules', 'us.yaml')).rules);

// ---- traffic ------------------------------------------------------------------

interface Shot {
  readonly cls: string;
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly path: string;
  readonly headers: Record<string, string>;
  /** The client address the edge will see (X-Forwarded-For, believed from loopback). */
  readonly ip: string;
  /** The rule that must decide it. */
  readonly rule: string;
}

interface Bucket {
  readonly cls: string;
  readonly capacity: number;
  readonly perSeconds: number;
  sent: number;
  admitted: number;
  denied: number;
  /** Answers other than 200/429 (a store timeout may still have taken a token in Redis). */
  errors: number;
  first: number;
  last: number;
}

/** Distinct loopback-free addresses: 10.1.0.0 and up for the population, 10.200/10.201 for hot clients. */
const ipOf = (n: number) => `10.${1 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`;

const HOT = [
  {
    cls: 'hot runs-query (api-key 15/10s)',
    ids: 20,
    perSecond: 3,
    shot: (k: number): Shot => ({
      cls: '',
      method: 'POST',
      path: '/runs/query',
      headers: { 'x-api-key': `soak-hot-q-${k}` },
      ip: '10.199.0.1',
      rule: 'runs-query',
    }),
  },
  {
    cls: 'hot runs-stats (api-key 1/10s)',
    ids: 10,
    perSecond: 0.5,
    shot: (k: number): Shot => ({
      cls: '',
      method: 'GET',
      path: '/runs/stats',
      headers: { 'x-api-key': `soak-hot-s-${k}` },
      ip: '10.199.0.1',
      rule: 'runs-stats',
    }),
  },
  {
    cls: 'hot repos (user-ip 100/60s)',
    ids: 10,
    perSecond: 6,
    shot: (k: number): Shot => ({
      cls: '',
      method: 'GET',
      path: '/repos/soak',
      headers: { 'x-user-id': `soak-hot-u-${k}` },
      ip: `10.200.0.${k}`,
      rule: 'repos',
    }),
  },
  {
    cls: 'hot public (ip 100/60s)',
    ids: 10,
    perSecond: 6,
    shot: (k: number): Shot => ({
      cls: '',
      method: 'GET',
      path: `/pages/${k}`,
      headers: {},
      ip: `10.201.0.${k}`,
      rule: 'public',
    }),
  },
].map((h) => ({ ...h, shot: (k: number): Shot => ({ ...h.shot(k), cls: h.cls }) }));

/** The n-th identity of the population, as one request (the kind and the rule rotate with n). */
function coldShot(n: number): Shot {
  const ip = ipOf(n);
  switch (n % 6) {
    case 0:
      return {
        cls: 'cold default (api-key)',
        method: 'GET',
        path: `/threads/${n}`,
        headers: { 'x-api-key': `soak-key-${n}` },
        ip,
        rule: 'default',
      };
    case 1:
      return {
        cls: 'cold default (user-ip)',
        method: 'GET',
        path: `/threads/${n}/state`,
        headers: { 'x-user-id': `soak-user-${n}` },
        ip,
        rule: 'default',
      };
    case 2:
      return { cls: 'cold public (ip)', method: 'GET', path: `/docs/${n}`, headers: {}, ip, rule: 'public' };
    case 3:
      return {
        cls: 'cold runs-query (api-key)',
        method: 'POST',
        path: '/runs/query',
        headers: { 'x-api-key': `soak-key-${n}` },
        ip,
        rule: 'runs-query',
      };
    case 4:
      return {
        cls: 'cold deletion (api-key)',
        method: 'DELETE',
        path: `/sessions/${n}`,
        headers: { 'x-api-key': `soak-key-${n}` },
        ip,
        rule: 'deletion',
      };
    default:
      return {
        cls: 'cold commits (user-ip)',
        method: 'GET',
        path: `/commits/${n}`,
        headers: { 'x-user-id': `soak-user-${n}` },
        ip,
        rule: 'commits',
      };
  }
}

const buckets = new Map<string, Bucket>();

/** The one bucket `shot` takes from, by the same matcher the edge compiles; throws when the plan is wrong. */
function bucketOf(shot: Shot): Bucket {
  const request: MatchRequest = { method: shot.method, path: shot.path, headers: shot.headers, ip: shot.ip };
  const match = matcher.match(request);
  if (!match || match.rule.id !== shot.rule || match.limits.length !== 1) {
    throw new Error(
      `${shot.cls}: ${shot.method} ${shot.path} decides ${match?.rule.id} with ${match?.limits.length} limits, not ${shot.rule} with one`,
    );
  }
  const limit = match.limits[0]!;
  const id = `${match.rule.id}\u0000${limit.by}\u0000${identityOf(request, limit.by)}`;
  let b = buckets.get(id);
  if (!b)
    buckets.set(
      id,
      (b = {
        cls: shot.cls,
        capacity: limit.count,
        perSeconds: limit.perSeconds,
        sent: 0,
        admitted: 0,
        denied: 0,
        errors: 0,
        first: Infinity,
        last: 0,
      }),
    );
  return b;
}

// ---- the run ------------------------------------------------------------------

const errors = { status: new Map<number, number>(), network: new Map<string, number>() };
const count = <K>(m: Map<K, number>, k: K) => m.set(k, (m.get(k) ?? 0) + 1);
let requests = 0;

async function send(pool: Pool, shot: Shot): Promise<void> {
  const bucket = bucketOf(shot);
  const start = performance.now();
  try {
    const res = await pool.request({
      method: shot.method,
      path: shot.path,
      headers: { ...shot.headers, 'x-forwarded-for': shot.ip },
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
    });
    await res.body.dump();
    requests++;
    if (res.statusCode !== 200 && res.statusCode !== 429) {
      count(errors.status, res.statusCode); // neither admitted nor denied: not counted in the bucket
      bucket.errors++;
      return;
    }
    bucket.sent++;
    bucket.first = Math.min(bucket.first, start);
    bucket.last = Math.max(bucket.last, performance.now());
    if (res.statusCode === 200) bucket.admitted++;
    else bucket.denied++;
  } catch (err) {
    requests++;
    bucket.errors++;
    count(errors.network, (err as { code?: string }).code ?? (err as Error).message);
  }
}

interface Sample {
  readonly t: number;
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  /** The edge's event-loop lag (prom-client's sampled figure), seconds. */
  readonly lag: number;
  readonly requests: number;
  /** Distinct population identities sent so far. */
  readonly identities: number;
  /** Taken right after a full GC. */
  readonly gc: boolean;
}

/** A metric of the edge's /metrics text (prom-client's default metrics under the `gateway_` prefix). */
function gauge(text: string, ...names: string[]): number {
  for (const name of names) {
    const m = new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text);
    if (m) return Number(m[1]);
  }
  return NaN;
}

async function scrape(adminUrl: string): Promise<string> {
  const res = await fetch(`${adminUrl}/metrics`);
  return res.text();
}

/** Least-squares line through (x, y): slope and value at the mean x. */
function fit(xs: readonly number[], ys: readonly number[]): { slope: number; mean: number } {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return { slope: den === 0 ? 0 : num / den, mean: my };
}

/** The edge's V8 inspector, for one command: HeapProfiler.collectGarbage. */
async function connectInspector(port: number): Promise<{ collectGarbage(): Promise<void>; close(): void }> {
  const [target] = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as {
    webSocketDebuggerUrl: string;
  }[];
  const ws = new WebSocket(target!.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.addEventListener('open', resolve, { once: true });
    ws.addEventListener('error', reject, { once: true });
  });
  let id = 0;
  const waiting = new Map<number, () => void>();
  ws.addEventListener('message', (event) => {
    const reply = JSON.parse(String(event.data)) as { id?: number };
    if (reply.id !== undefined) waiting.get(reply.id)?.();
  });
  return {
    collectGarbage: () =>
      new Promise<void>((resolve) => {
        const n = ++id;
        waiting.set(n, () => (waiting.delete(n), resolve()));
        ws.send(JSON.stringify({ id: n, method: 'HeapProfiler.collectGarbage' }));
      }),
    close: () => ws.close(),
  };
}

const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false });
let cleaned = false;
async function cleanup(): Promise<number> {
  await stopAll();
  if (cleaned || redis.status !== 'ready') return 0;
  cleaned = true;
  const deleted = await deleteKeys(redis, `${KEY_PREFIX}:*`);
  await redis.quit();
  return deleted;
}
async function abort(message: string, code = 1): Promise<never> {
  console.error(message);
  await cleanup().catch((err: unknown) => console.error(`cleanup: ${(err as Error).message}`));
  process.exit(code);
}
process.once('SIGINT', () => void abort('interrupted: children stopped, Redis keys deleted', 130));
setTimeout(
  () => void abort(`FAIL the soak took longer than ${SECONDS + 120} s: stopped`),
  (SECONDS + 120) * 1000,
).unref();

try {
  await redis.connect();
} catch (err) {
  await abort(
    `FAIL Redis at ${REDIS_URL} is not reachable (${(err as Error).message}); start it or set SOAK_REDIS_URL`,
  );
}

// Correctness first: every planned request shape maps to exactly one bucket of the intended rule.
for (const h of HOT) for (let k = 0; k < h.ids; k++) bucketOf(h.shot(k));
for (let n = 0; n < 12; n++) bucketOf(coldShot(n));
buckets.clear();

process.chdir(ROOT);
const adminPort = await freePort();
const upstream = await startService('upstream', ['--import', 'tsx', 'bench/peers/upstream.ts'], process.env, null);
const edgeEnv: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  PORT: '0',
  ADMIN_PORT: String(adminPort),
  REGION: 'us',
  RULES_DIR: 'rules',
  LOG_LEVEL: 'info',
  REDIS_URL,
  KEY_PREFIX,
  IDENTITY_SECRET: randomBytes(24).toString('base64url'),
  TRUST_PROXY: '127.0.0.1/32',
  AGENT_SERVER_URL: upstream.url,
  CONTROL_PLANE_URL: upstream.url,
  // A store failure shows as a 503 (an error below), not as a quiet fallback to per-process buckets.
  FAIL_MODE: 'closed',
};
// The inspector (loopback only) lets the soak force a full GC before a memory sample.
const inspectPort = await freePort();
const edge = await startService(
  'edge',
  [`--inspect=127.0.0.1:${inspectPort}`, join(ROOT, 'bin', 'gateway.js'), 'start'],
  edgeEnv,
  null,
);
const inspector = await connectInspector(inspectPort);
const adminUrl = `http://127.0.0.1:${adminPort}`;
const coldPool = new Pool(edge.url, { connections: COLD_WORKERS });
const hotPool = new Pool(edge.url, { connections: 32 });

console.log(
  `soak ${runId}: ${SECONDS} s, ${IDENTITIES} identities, ${COLD_WORKERS} cold workers, edge ${edge.url} (admin ${adminUrl}), Redis ${REDIS_URL} prefix ${KEY_PREFIX}`,
);
const samples: Sample[] = [];
const touched = new Set<number>();
const t0 = performance.now();
const deadline = t0 + SECONDS * 1000;
const sample = async (gc = false) => {
  if (gc) await inspector.collectGarbage();
  const text = await scrape(adminUrl);
  samples.push({
    t: (performance.now() - t0) / 1000,
    rss: gauge(text, 'gateway_process_resident_memory_bytes'),
    heapUsed: gauge(text, 'gateway_nodejs_heap_size_used_bytes'),
    heapTotal: gauge(text, 'gateway_nodejs_heap_size_total_bytes'),
    lag: gauge(text, 'gateway_nodejs_eventloop_lag_seconds'),
    requests,
    identities: touched.size,
    gc,
  });
};
await sample(true);
const sampler = setInterval(() => void sample().catch(() => {}), SAMPLE_MS);
const gcSampler = setInterval(() => void sample(true).catch(() => {}), GC_SAMPLE_MS);

// Hot: each class ticks at (ids × perSecond) per second, one identity after another; nothing waits for answers.
const inFlight = new Set<Promise<void>>();
const hotTimers = HOT.map((h) => {
  let k = 0;
  return setInterval(
    () => {
      const p = send(hotPool, h.shot(k++ % h.ids)).finally(() => inFlight.delete(p));
      inFlight.add(p);
    },
    1000 / (h.ids * h.perSecond),
  );
});

// Cold: closed loop over the population.
let nextIdentity = 0;
await Promise.all(
  Array.from({ length: COLD_WORKERS }, async () => {
    while (performance.now() < deadline) {
      const n = nextIdentity++ % IDENTITIES;
      touched.add(n);
      await send(coldPool, coldShot(n));
    }
  }),
);
hotTimers.forEach(clearInterval);
await Promise.all(inFlight);
clearInterval(sampler);
clearInterval(gcSampler);
await sample(true);
inspector.close();
const elapsed = (performance.now() - t0) / 1000;
const finalMetrics = await scrape(adminUrl);
const redisKeys = await countKeys(redis, `${KEY_PREFIX}:*`);
await Promise.all([coldPool.close(), hotPool.close()]);
const deleted = await cleanup();

// ---- report -------------------------------------------------------------------

const round = (x: number, d = 4) => Number(x.toFixed(d));
const mb = (b: number) => round(b / 2 ** 20, 1);

interface ClassRow {
  cls: string;
  buckets: number;
  sent: number;
  admitted: number;
  denied: number;
  errors: number;
  allowed: number;
  accuracy: number;
  worst_bucket: number;
}
const byClass = new Map<string, ClassRow>();
/** Buckets that never saw an error: the limiter's math alone, without store faults. */
const clean = { admitted: 0, allowed: 0 };
for (const b of buckets.values()) {
  const seconds = Math.max(0, (b.last - b.first) / 1000);
  const allowed = Math.min(b.sent, b.capacity + Math.floor((seconds * b.capacity) / b.perSeconds));
  const row = byClass.get(b.cls) ?? {
    cls: b.cls,
    buckets: 0,
    sent: 0,
    admitted: 0,
    denied: 0,
    errors: 0,
    allowed: 0,
    accuracy: 0,
    worst_bucket: Infinity,
  };
  row.buckets++;
  row.sent += b.sent;
  row.admitted += b.admitted;
  row.denied += b.denied;
  row.errors += b.errors;
  row.allowed += allowed;
  if (b.errors === 0) {
    clean.admitted += b.admitted;
    clean.allowed += allowed;
  }
  row.worst_bucket = Math.min(row.worst_bucket, allowed === 0 ? 1 : b.admitted / allowed);
  byClass.set(b.cls, row);
}
const rows = [...byClass.values()]
  .sort((a, b) => a.cls.localeCompare(b.cls))
  .map((r) => ({ ...r, accuracy: round(r.admitted / r.allowed), worst_bucket: round(r.worst_bucket) }));
const totals = rows.reduce(
  (t, r) => ({
    sent: t.sent + r.sent,
    admitted: t.admitted + r.admitted,
    denied: t.denied + r.denied,
    allowed: t.allowed + r.allowed,
  }),
  { sent: 0, admitted: 0, denied: 0, allowed: 0 },
);
const accuracy = round(totals.admitted / totals.allowed);

const collected = samples.filter((s) => s.gc);
const at = (share: number) =>
  collected.reduce((best, s) => (Math.abs(s.t - share * elapsed) < Math.abs(best.t - share * elapsed) ? s : best));
// Warm-up also lasts until the edge's bounded identity-digest cache has seen as many identities as it holds (or
// the whole population): until then its growth is filling, not a trend. Three GC samples after that are needed.
const cacheFill = Math.min(IDENTITIES, 2 * DIGEST_CACHE_GENERATION);
const cacheFullAt = collected.find((s) => s.identities >= cacheFill)?.t;
const warmFrom =
  cacheFullAt !== undefined && collected.filter((s) => s.t >= cacheFullAt).length >= 3
    ? Math.max(WARMUP_SHARE * SECONDS, cacheFullAt)
    : WARMUP_SHARE * SECONDS;
const warm = collected.filter((s) => s.t >= warmFrom);
const trend = (pick: (s: Sample) => number) => {
  const { slope, mean } = fit(
    warm.map((s) => s.t),
    warm.map(pick),
  );
  const span = warm.length > 1 ? warm[warm.length - 1]!.t - warm[0]!.t : 0;
  return { mb_per_min: round((slope * 60) / 2 ** 20, 2), growth: round((slope * span) / mean) };
};
const firstWarm = warm[0];
const lastWarm = warm[warm.length - 1];
/** Live-heap growth after warm-up per population identity first seen in that time. */
const bytesPerNewIdentity =
  firstWarm && lastWarm && lastWarm.identities > firstWarm.identities
    ? Math.round((lastWarm.heapUsed - firstWarm.heapUsed) / (lastWarm.identities - firstWarm.identities))
    : null;
const memory = {
  start: at(0),
  warm: warm[0] ?? at(WARMUP_SHARE),
  middle: at(0.5),
  end: collected[collected.length - 1]!,
  trend_after_warmup: {
    rss: trend((s) => s.rss),
    heap_used: trend((s) => s.heapUsed),
    heap_bytes_per_new_identity: bytesPerNewIdentity,
  },
};
const errorCount = [...errors.status.values(), ...errors.network.values()].reduce((a, b) => a + b, 0);
const edgeCounts = {
  allowed: sumOf(finalMetrics, 'allowed'),
  denied: sumOf(finalMetrics, 'denied'),
  store_errors: Number(/^gateway_store_errors_total\{store="redis"\} (\d+)$/m.exec(finalMetrics)?.[1] ?? 0),
};
function sumOf(text: string, decision: string): number {
  let n = 0;
  for (const m of text.matchAll(
    new RegExp(`^gateway_requests_total\\{[^}]*decision="${decision}"[^}]*\\} (\\d+)$`, 'gm'),
  ))
    n += Number(m[1]);
  return n;
}

const accuracyOk = accuracy >= TARGET_ACCURACY[0] && accuracy <= TARGET_ACCURACY[1];
const growthOk =
  memory.trend_after_warmup.rss.growth <= MAX_GROWTH && memory.trend_after_warmup.heap_used.growth <= MAX_GROWTH;

console.log(
  `\n${requests} requests in ${elapsed.toFixed(1)} s (${Math.round(requests / elapsed)}/s); ${touched.size} of ${IDENTITIES} population identities used, ${buckets.size} buckets`,
);
console.log(
  `errors: ${errorCount} ${JSON.stringify({ status: Object.fromEntries(errors.status), network: Object.fromEntries(errors.network) })}; edge store errors ${edgeCounts.store_errors}`,
);
console.log(`redis: ${redisKeys} keys under ${KEY_PREFIX}:*, ${deleted} deleted\n`);
console.table(
  rows.map((r) => ({
    class: r.cls,
    buckets: r.buckets,
    sent: r.sent,
    admitted: r.admitted,
    denied: r.denied,
    errors: r.errors,
    'allowed (math)': r.allowed,
    accuracy: r.accuracy,
    'worst bucket': r.worst_bucket,
  })),
);
console.log(
  `total: admitted ${totals.admitted} / allowed ${totals.allowed} = accuracy ${accuracy}; buckets without errors: ${round(clean.admitted / clean.allowed)}\n`,
);
console.log('edge memory, each right after a full GC (live heap):');
console.table(
  (['start', 'warm', 'middle', 'end'] as const).map((k) => ({
    at: k,
    't (s)': round(memory[k].t, 1),
    'rss MB': mb(memory[k].rss),
    'heap used MB': mb(memory[k].heapUsed),
    'heap total MB': mb(memory[k].heapTotal),
  })),
);
console.log(
  `trend after warm-up (t ≥ ${round(warmFrom, 1)} s): rss ${JSON.stringify(memory.trend_after_warmup.rss)}, heap used ${JSON.stringify(memory.trend_after_warmup.heap_used)}`,
);
console.log(`live heap growth after warm-up per identity first seen then: ${bytesPerNewIdentity ?? '-'} bytes`);
console.log(`${accuracyOk ? 'PASS' : 'FAIL'} accuracy ${accuracy} within [${TARGET_ACCURACY.join(', ')}]`);
if (cacheFullAt === undefined || warmFrom < cacheFullAt) {
  console.log(
    `note: the edge's identity-digest cache had not seen ${cacheFill} identities with time to spare (this run: ${touched.size}); it grows about 150 bytes ` +
      `per new identity until then, so live-heap growth in this run may be that cache filling: a longer run (SOAK_SECONDS=300) shows whether it levels off`,
  );
}
console.log(
  `${growthOk ? 'PASS' : 'FAIL'} memory growth after warm-up ≤ ${MAX_GROWTH * 100}% (rss ${round(memory.trend_after_warmup.rss.growth * 100, 1)}%, heap ${round(memory.trend_after_warmup.heap_used.growth * 100, 1)}%)`,
);

const result = {
  run: runId,
  date: new Date().toISOString(),
  node: process.version,
  cpus: cpus().length,
  cpu_model: cpus()[0]?.model,
  load_avg_1m: round(loadavg()[0]!, 2),
  config: {
    seconds: SECONDS,
    identities: IDENTITIES,
    cold_workers: COLD_WORKERS,
    hot: HOT.map(({ cls, ids, perSecond }) => ({ cls, ids, per_second: perSecond })),
    rules: 'rules/us.yaml',
    log_level: 'info',
    fail_mode: 'closed',
    redis: REDIS_URL,
    key_prefix: KEY_PREFIX,
  },
  requests,
  seconds: round(elapsed, 2),
  rps: Math.round(requests / elapsed),
  identities_used: touched.size,
  buckets: buckets.size,
  errors: { total: errorCount, status: Object.fromEntries(errors.status), network: Object.fromEntries(errors.network) },
  edge_counts: edgeCounts,
  redis: { keys: redisKeys, deleted },
  accuracy: {
    total: accuracy,
    ...totals,
    buckets_without_errors: round(clean.admitted / clean.allowed),
    by_class: rows,
  },
  memory: { ...memory, samples },
  targets: {
    accuracy: TARGET_ACCURACY,
    max_growth_after_warmup: MAX_GROWTH,
    warmup_share: WARMUP_SHARE,
    warmup_until_s: round(warmFrom, 1),
    identity_cache_full_at_s: cacheFullAt ?? null,
  },
  pass: { accuracy: accuracyOk, memory: growthOk },
};
mkdirSync(RESULTS, { recursive: true });
const json = JSON.stringify(result, null, 2);
const out = join(RESULTS, `soak-${result.date.replace(/:/g, '-')}.json`);
writeFileSync(out, json);
writeFileSync(join(RESULTS, 'soak-latest.json'), json);
console.log(`\nwrote ${out}`);
process.exit(accuracyOk && growthOk ? 0 : 1);
