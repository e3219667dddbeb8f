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
 * Traffic (bench/soak/traffic.ts), one identity per request so each request maps to exactly one bucket (checked with
 * the compiled matcher before anything is sent):
 * - hot: a few identities per rule, each paced at 2-5× its refill rate, so their buckets empty early and then admit
 *   exactly their refill;
 * - cold: closed-loop workers walking a population of 100,000 identities (API keys, user ids with their IPs, bare IPs)
 *   across several rules.
 *
 * Redis keys carry a unique KEY_PREFIX and are deleted at the end (SCAN + UNLINK); the database is never flushed.
 * This file runs the soak; bench/soak/ holds its settings, traffic, client tally, edge readings, summary and report.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { compile } from '../src/rules/compile.ts';
import { loadRuleFile } from '../src/rules/load.ts';
import { freePort, startService, stopAll } from './peers/processes.ts';
import { countKeys, deleteKeys } from './peers/redis-keys.ts';
import { createTally } from './soak/client.ts';
import { connectInspector, gauge, scrape, type Sample } from './soak/edge-readings.ts';
import { printReport, writeResult } from './soak/report.ts';
import {
  COLD_WORKERS,
  GC_SAMPLE_MS,
  IDENTITIES,
  KEY_PREFIX,
  REDIS_URL,
  ROOT,
  runId,
  SAMPLE_MS,
  SECONDS,
} from './soak/settings.ts';
import { accuracyOf, edgeCountsOf, memoryOf } from './soak/summary.ts';
import { coldShot, HOT } from './soak/traffic.ts';
import { exitPaths } from './peers/exit-paths.ts';

const tally = createTally(compile(loadRuleFile(join(ROOT, 'rules', 'us.yaml')).rules));

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
const abort = exitPaths(cleanup, (SECONDS + 120) * 1000, 'the soak');

try {
  await redis.connect();
} catch (err) {
  await abort(
    `FAIL Redis at ${REDIS_URL} is not reachable (${(err as Error).message}); start it or set SOAK_REDIS_URL`,
  );
}

// Correctness first: every planned request shape maps to exactly one bucket of the intended rule.
for (const h of HOT) for (let k = 0; k < h.ids; k++) tally.bucketOf(h.shot(k));
for (let n = 0; n < 12; n++) tally.bucketOf(coldShot(n));
tally.buckets.clear();

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
    requests: tally.requests,
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
      const p = tally.send(hotPool, h.shot(k++ % h.ids)).finally(() => inFlight.delete(p));
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
      await tally.send(coldPool, coldShot(n));
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

const accuracy = accuracyOf(tally.buckets.values());
const memory = memoryOf(samples, elapsed);
const run = {
  requests: tally.requests,
  elapsed,
  identitiesUsed: touched.size,
  buckets: tally.buckets.size,
  errors: tally.errors,
  edgeCounts: edgeCountsOf(finalMetrics),
  redisKeys,
  deleted,
  samples,
};
printReport(run, accuracy, memory);
writeResult(run, accuracy, memory);
process.exit(accuracy.ok && memory.ok ? 0 : 1);
