import { afterAll, afterEach, beforeAll, vi } from 'vitest';
import { within } from './async.ts';
import { rulesDir, startTestGateway, type TestGateway } from './gateway.ts';
import { sleep, startLoad } from './load.ts';
import { startRedis, type RedisProcess } from '../../support/redis-server.ts';
import { startUpstream, type TestUpstream } from './upstream.ts';

/**
 * Store faults under load (test/ops/redis-*.test.ts). Every test starts its own `redis-server` on a free loopback port
 * (the shared one on 6379 is never touched) and an in-process gateway on it, then kills, pauses or restarts that server
 * while closed-loop clients keep sending: STORE_WORKERS to a rule that never denies (a fresh api key per request),
 * CONTROL_WORKERS to a path no rule matches (never touches the store).
 *
 * Latency bound during an outage. A request that meets the fault may pay one store budget (STORE_TIMEOUT_MS = 50 ms);
 * once the breaker is open the store costs nothing. Everything else a request costs (client, edge, upstream, all in
 * this process, on a CPU shared with whatever else the machine runs) is what the control requests pay in the same
 * window. The budget is a timer, and a timer fires as late as the event loop runs late: the loop's worst delay in the
 * window (perf_hooks.monitorEventLoopDelay, 10 ms resolution) is measured too. So:
 *   p99(store requests) ≤ p99(control requests) + STORE_TIMEOUT_MS + worst loop delay + MARGIN_MS,
 * all over the outage, MARGIN_MS = 50 ms (GC, the read turn after the timer). The control group is measured alongside,
 * not before, because a shared machine's load changes from one second to the next. Without the budget (a paused Redis
 * with no timeout, or commands queued while disconnected) requests wait until the resume or the reconnect: seconds.
 *
 * Breaker check. During a pause, a store call without a breaker always waits the full budget. With it, only the calls
 * made before the circuit opens and one probe per cooldown second do; the rest fail at once. The breaker counts calls
 * that failed together (in flight at once) as one failure, so it opens after BREAKER_THRESHOLD such rounds, each
 * costing at most one call per store worker. The store-duration histogram, read just before the fault and just before
 * the resume, must show both: some fast errors (none without a breaker), and at most SLOW_ERRORS_ALLOWED slower than
 * 25 ms.
 *
 * What is timing and what is not: statuses, fallback decisions and 503s are asserted for requests that started after
 * the fault took effect (the Redis process has exited, or is stopped), where no other outcome is possible. A starved
 * CPU can make a store call miss its 50 ms budget while Redis is healthy (Redis itself not scheduled in time), so
 * nothing asserts that a request *before* a fault was decided by Redis, except the sequential bucket checks
 * (redis-outage-probes.ts), which discard an attempt that a fallback decided (seen in the request log as `fellBack`)
 * and repeat it with a fresh key, at most 3 times. A Redis that is not used again fails all three.
 */

export const STORE_TIMEOUT_MS = 50;
export const MARGIN_MS = 50;
export const STORE_WORKERS = 15;
export const CONTROL_WORKERS = 15;
/** BreakerLimiter's default failureThreshold, which the gateway uses. */
export const BREAKER_THRESHOLD = 5;
/**
 * Rounds until the circuit opens (one more for the round in flight at the fault), plus one probe per cooldown second of
 * an outage (under 5 s here).
 */
export const SLOW_ERRORS_ALLOWED = STORE_WORKERS * (BREAKER_THRESHOLD + 1) + 5;

const RULES = `
- id: strict
  match: { prefix: /strict }
  fail: closed
  limits:
    - { by: api-key, count: 1000000, per: 1s, category: Strict }
- id: small
  match: { prefix: /small }
  limits:
    - { by: api-key, count: 4, per: 3600s, category: Small }
- id: ten
  match: { prefix: /ten }
  limits:
    - { by: api-key, count: 10, per: 3600s, category: Ten }
- id: wide
  match: { prefix: /wide }
  limits:
    - { by: api-key, count: 1000000, per: 1s, category: Wide }
`;

export interface RedisOutageFixture {
  /** An in-process gateway on `redisUrl` (the test rules, the shared upstream, STORE_TIMEOUT_MS), closed after the test. */
  gatewayOn(redisUrl: string, env: Record<string, string>): Promise<TestGateway>;
  /** A private redis-server and a gateway on it, both stopped after the test. */
  redisAndGateway(env: Record<string, string>): Promise<{ redis: RedisProcess; gw: TestGateway }>;
  /** Stops `redis` (by pid) after the test, before the gateways. */
  track(redis: RedisProcess): void;
}

/**
 * Registers the hooks every store-fault test file shares: the rules and upstream (beforeAll, with one second of warm-up
 * load), stopping each test's Redis servers and gateways (afterEach), and removing the rules and upstream (afterAll).
 */
export function useRedisOutageFixture(): RedisOutageFixture {
  let rules: ReturnType<typeof rulesDir>;
  let upstream: TestUpstream;
  let redises: RedisProcess[] = [];
  let gateways: TestGateway[] = [];

  async function gatewayOn(redisUrl: string, env: Record<string, string>): Promise<TestGateway> {
    const gw = await startTestGateway({
      REDIS_URL: redisUrl,
      RULES_DIR: rules.dir,
      AGENT_SERVER_URL: upstream.url,
      CONTROL_PLANE_URL: upstream.url,
      STORE_TIMEOUT_MS: String(STORE_TIMEOUT_MS),
      DRAIN_SECONDS: '0',
      ...env,
    });
    gateways.push(gw);
    return gw;
  }

  async function redisAndGateway(env: Record<string, string>): Promise<{ redis: RedisProcess; gw: TestGateway }> {
    const redis = await startRedis();
    redises.push(redis);
    return { redis, gw: await gatewayOn(redis.url, env) };
  }

  beforeAll(async () => {
    rules = rulesDir(RULES);
    upstream = await startUpstream();
    // The first second of load in a fresh worker is slow (JIT, first connections): spend it here, not in the first
    // test's comparison.
    const redis = await startRedis();
    redises.push(redis);
    const gw = await gatewayOn(redis.url, {});
    try {
      const load = mixedLoad(gw);
      await sleep(1000);
      await load.stop();
    } finally {
      [redises, gateways] = [[], []];
      await gw.close();
      await redis.stop();
    }
  });

  afterEach(async () => {
    vi.restoreAllMocks();
    // Redis first: a gateway whose Redis is still paused would wait on its QUIT.
    const [rs, gs] = [redises, gateways];
    redises = [];
    gateways = [];
    await Promise.all(rs.map((r) => r.stop(1000)));
    await Promise.all(gs.map((g) => g.close()));
  });

  afterAll(async () => {
    await upstream?.close();
    rules?.remove();
  });

  return { gatewayOn, redisAndGateway, track: (redis) => void redises.push(redis) };
}

/** SIGKILL by pid; `goneAt` once the process has exited. */
export async function kill9(redis: RedisProcess): Promise<{ at: number; goneAt: number }> {
  const at = performance.now();
  process.kill(redis.pid, 'SIGKILL');
  await within(redis.stop(), 3000, 'redis-server exit after SIGKILL');
  return { at, goneAt: performance.now() };
}

/**
 * STORE_WORKERS on `storePath` (a fresh api key per request) and CONTROL_WORKERS on /control, which no rule matches.
 */
export function mixedLoad(gw: TestGateway, storePath = '/wide') {
  return startLoad({
    url: gw.url,
    workers: STORE_WORKERS + CONTROL_WORKERS,
    request: (w, i) => ({ path: w < STORE_WORKERS ? storePath : '/control', headers: { 'x-api-key': `k-${w}-${i}` } }),
  });
}
