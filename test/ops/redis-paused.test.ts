import { describe, expect, it } from 'vitest';
import { sleep, statusCounts, watchLoopDelay } from '../helpers/load.ts';
import { mixedLoad, SLOW_ERRORS_ALLOWED, useRedisOutageFixture } from '../helpers/redis-outage.ts';
import {
  expectFailureLoggedPerTransition,
  expectStoreUnavailable,
  metrics,
  outageLatency,
  report,
  requestLines,
  storeErrorsBetween,
} from '../helpers/redis-outage-measure.ts';
import { smallBucketThrough, untilRedisDecides } from '../helpers/redis-outage-probes.ts';
import { metricValue, waitForMetric } from '../helpers/scrape-metrics.ts';

/**
 * The gateway's private Redis paused (SIGSTOP) under load, then resumed (SIGCONT), in each FAIL_MODE. The setup, the
 * latency bound and the breaker check are explained in test/helpers/redis-outage.ts.
 */

const { gatewayOn, redisAndGateway } = useRedisOutageFixture();

describe('Redis paused under load (SIGSTOP), then resumed (SIGCONT)', () => {
  it('FAIL_MODE=open: timeouts fall back within the budget, the breaker fails fast, zero 5xx; after SIGCONT Redis buckets are shared by two edges again', async () => {
    const { redis, gw } = await redisAndGateway({ FAIL_MODE: 'open' });
    const load = mixedLoad(gw);
    await sleep(1000);
    const beforeFault = await metrics(gw);
    const lag = watchLoopDelay();
    const pausedAt = performance.now();
    redis.pause();
    await waitForMetric(gw.gateway.admin.port, 'gateway_store_breaker_state', {}, (v) => v === 2, { timeoutMs: 3000 });
    await sleep(1300);
    const outage = await metrics(gw);
    const resumedAt = performance.now();
    redis.resume();
    // The next probe (one per cooldown second, sent by the load) finds Redis and closes the circuit.
    await waitForMetric(gw.gateway.admin.port, 'gateway_store_breaker_state', {}, (v) => v === 0, { timeoutMs: 5000 });
    const samples = await load.stop();
    const loopDelayMs = lag.stop();
    const end = await metrics(gw);

    const counts = statusCounts(samples);
    const l = outageLatency(samples, '/wide', pausedAt, loopDelayMs, pausedAt, resumedAt);
    report('pause, open', l, counts);
    expect(counts).toEqual({ 200: samples.length });
    expect(l.store.n).toBeGreaterThanOrEqual(10);
    expect(l.store.p99).toBeLessThanOrEqual(l.bound);

    // A request started after the pause and answered before the resume cannot have had an answer from Redis: the
    // fallback decided it. (One started shortly before the resume may get Redis's answer within its budget.)
    const lines = await requestLines(gw, samples);
    const during = samples.filter((s) => s.path === '/wide' && s.start >= pausedAt && s.end < resumedAt);
    expect(during.length).toBeGreaterThanOrEqual(10);
    expect(during.filter((s) => lines.get(s.id)!.fellBack !== true).map((s) => s.id)).toEqual([]);
    const errors = storeErrorsBetween(beforeFault, outage);
    console.info(
      `[pause, open] store errors during the pause: ${errors.slow} waited the budget, ${errors.fast} failed fast`,
    );
    expect(errors.slow).toBeGreaterThan(0); // the pause was seen as timeouts
    expect(errors.slow).toBeLessThanOrEqual(SLOW_ERRORS_ALLOWED);
    expect(errors.fast).toBeGreaterThan(0); // the open breaker answered without waiting
    expect(
      metricValue(end, 'gateway_store_fallback_total') - metricValue(beforeFault, 'gateway_store_fallback_total'),
    ).toBeGreaterThanOrEqual(during.length);
    expect(gw.logs.lines().some((line) => line.msg === 'rate limit store circuit closed')).toBe(true);
    expectFailureLoggedPerTransition(gw);

    // Redis decides again: a bucket of 4 is shared by this edge and a second one on the same Redis.
    const second = await gatewayOn(redis.url, { FAIL_MODE: 'open' });
    const { statuses, fellBack } = await smallBucketThrough([gw, second, gw, second, gw, second]);
    expect(fellBack).toBe(false);
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
  });

  it('FAIL_MODE=closed: only 503 {code: "store_unavailable"} while paused, within the budget; 200 again after SIGCONT', async () => {
    const { redis, gw } = await redisAndGateway({ FAIL_MODE: 'closed' });
    const load = mixedLoad(gw);
    await sleep(1000);
    const beforeFault = await metrics(gw);
    const lag = watchLoopDelay();
    const pausedAt = performance.now();
    redis.pause();
    await sleep(1500);
    const outage = await metrics(gw);
    const resumedAt = performance.now();
    redis.resume();
    await waitForMetric(gw.gateway.admin.port, 'gateway_store_breaker_state', {}, (v) => v === 0, { timeoutMs: 5000 });
    const samples = await load.stop();
    const loopDelayMs = lag.stop();
    const text = await metrics(gw);

    const store = samples.filter((s) => s.path === '/wide');
    const control = samples.filter((s) => s.path === '/control');
    const l = outageLatency(samples, '/wide', pausedAt, loopDelayMs, pausedAt, resumedAt);
    report('pause, closed', l, statusCounts(samples));
    expect(statusCounts(control)).toEqual({ 200: control.length });
    expect(Object.keys(statusCounts(store)).sort()).toEqual(['200', '503']);
    store.filter((s) => s.status === 503).forEach(expectStoreUnavailable);
    // Started after the pause and answered before the resume: Redis cannot have answered (see the open case).
    const during = store.filter((s) => s.start >= pausedAt && s.end < resumedAt);
    expect(during.length).toBeGreaterThanOrEqual(10);
    expect(during.filter((s) => s.status !== 503).map((s) => s.id)).toEqual([]);
    expect(l.store.p99).toBeLessThanOrEqual(l.bound);
    expect(metricValue(text, 'gateway_store_fallback_total')).toBe(0);
    const errors = storeErrorsBetween(beforeFault, outage);
    expect(errors.slow).toBeLessThanOrEqual(SLOW_ERRORS_ALLOWED);
    expect(errors.fast).toBeGreaterThan(0); // the open breaker answered without waiting

    // Back: Redis decides requests again (throws if not within 3 s).
    await untilRedisDecides(gw, 3000);
  });
});
