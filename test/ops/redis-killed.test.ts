import { describe, expect, it, vi } from 'vitest';
import { sleep, startLoad, statusCounts, watchLoopDelay } from '../helpers/load.ts';
import {
  kill9,
  mixedLoad,
  SLOW_ERRORS_ALLOWED,
  STORE_WORKERS,
  useRedisOutageFixture,
} from '../helpers/redis-outage.ts';
import {
  expectFailureLoggedPerTransition,
  expectStoreUnavailable,
  metrics,
  outageLatency,
  report,
  requestLines,
  storeErrorsBetween,
} from '../helpers/redis-outage-measure.ts';
import { send } from '../helpers/redis-outage-probes.ts';
import { metricValue } from '../helpers/scrape-metrics.ts';

/**
 * The gateway's private Redis killed (SIGKILL) under load, in each FAIL_MODE, and the fallback's share of a bucket
 * while Redis is down. The setup, the latency bound and the breaker check are explained in
 * test/helpers/redis-outage.ts.
 */

const { redisAndGateway } = useRedisOutageFixture();

describe('Redis killed under load (SIGKILL)', () => {
  it('FAIL_MODE=open: zero 5xx, every request after the kill is decided by the fallback, p99 within the budget', async () => {
    const stderr = vi.spyOn(console, 'error');
    const { redis, gw } = await redisAndGateway({ FAIL_MODE: 'open' });
    const load = mixedLoad(gw);
    await sleep(1000);
    const beforeFault = await metrics(gw);
    const lag = watchLoopDelay();
    const { at, goneAt } = await kill9(redis);
    await sleep(1500);
    const outage = await metrics(gw);
    const samples = await load.stop();
    const loopDelayMs = lag.stop();
    const end = await metrics(gw);

    const counts = statusCounts(samples);
    const l = outageLatency(samples, '/wide', at, loopDelayMs, at);
    report('kill, open', l, counts);
    expect(counts).toEqual({ 200: samples.length });
    expect(l.store.n).toBeGreaterThanOrEqual(10);
    expect(l.store.p99).toBeLessThanOrEqual(l.bound);

    const lines = await requestLines(gw, samples);
    const after = samples.filter((s) => s.path === '/wide' && s.start >= goneAt);
    expect(after.length).toBeGreaterThanOrEqual(10);
    expect(after.filter((s) => lines.get(s.id)!.fellBack !== true).map((s) => s.id)).toEqual([]);

    expect(
      metricValue(end, 'gateway_store_fallback_total') - metricValue(beforeFault, 'gateway_store_fallback_total'),
    ).toBeGreaterThanOrEqual(after.length);
    expect(metricValue(outage, 'gateway_store_breaker_state')).toBeGreaterThan(0);
    expect(storeErrorsBetween(beforeFault, outage).slow).toBeLessThanOrEqual(SLOW_ERRORS_ALLOWED);
    expectFailureLoggedPerTransition(gw);
    expect(
      stderr.mock.calls.filter((c) => String(c[0]).includes('ioredis')),
      'regression: ioredis printed "[ioredis] Unhandled error event" with a stack to stderr on every reconnect attempt while Redis was down',
    ).toEqual([]);
  });

  it('FAIL_MODE=closed: after the kill only 503 {detail, code: "store_unavailable"}, no other 5xx, p99 within the budget', async () => {
    const { redis, gw } = await redisAndGateway({ FAIL_MODE: 'closed' });
    const load = mixedLoad(gw);
    await sleep(1000);
    const lag = watchLoopDelay();
    const { at, goneAt } = await kill9(redis);
    await sleep(1500);
    const samples = await load.stop();
    const loopDelayMs = lag.stop();
    const text = await metrics(gw);

    const store = samples.filter((s) => s.path === '/wide');
    const control = samples.filter((s) => s.path === '/control');
    const l = outageLatency(samples, '/wide', at, loopDelayMs, at);
    report('kill, closed', l, statusCounts(samples));
    expect(statusCounts(control)).toEqual({ 200: control.length });
    expect(Object.keys(statusCounts(store)).sort()).toEqual(['200', '503']);
    expect(store.filter((s) => s.status === 200 && s.start >= goneAt).map((s) => s.id)).toEqual([]);
    expect(store.filter((s) => s.start >= goneAt).length).toBeGreaterThanOrEqual(10);
    store.filter((s) => s.status === 503).forEach(expectStoreUnavailable);
    expect(l.store.p99).toBeLessThanOrEqual(l.bound);

    expect(metricValue(text, 'gateway_store_fallback_total')).toBe(0);
    expect(metricValue(text, 'gateway_requests_total', { decision: 'store-down', status: '503' })).toBe(
      statusCounts(store)[503],
    );
  });

  it('a rule with `fail: closed` answers 503 while FAIL_MODE=open keeps every other rule at 200', async () => {
    const { redis, gw } = await redisAndGateway({ FAIL_MODE: 'open' });
    const load = startLoad({
      url: gw.url,
      workers: STORE_WORKERS,
      request: (w, i) => ({ path: w % 2 === 0 ? '/strict/x' : '/wide', headers: { 'x-api-key': `k-${w}-${i}` } }),
    });
    await sleep(500);
    const { goneAt } = await kill9(redis);
    await sleep(1000);
    const samples = await load.stop();
    const text = await metrics(gw);

    const strict = samples.filter((s) => s.path === '/strict/x');
    const wide = samples.filter((s) => s.path === '/wide');
    expect(statusCounts(wide)).toEqual({ 200: wide.length });
    expect(Object.keys(statusCounts(strict)).filter((s) => s !== '200' && s !== '503')).toEqual([]);
    const strictAfter = strict.filter((s) => s.start >= goneAt);
    expect(strictAfter.length).toBeGreaterThanOrEqual(10);
    strictAfter.forEach(expectStoreUnavailable);

    const lines = await requestLines(gw, samples);
    const wideAfter = wide.filter((s) => s.start >= goneAt);
    expect(wideAfter.length).toBeGreaterThanOrEqual(10);
    expect(wideAfter.filter((s) => lines.get(s.id)!.fellBack !== true).map((s) => s.id)).toEqual([]);
    expect(
      metricValue(text, 'gateway_requests_total', { rule: 'strict', decision: 'store-down', status: '503' }),
    ).toBeGreaterThanOrEqual(strictAfter.length);
    expect(metricValue(text, 'gateway_requests_total', { rule: 'wide', status: '503' })).toBe(0);
  });
});

describe('EXPECTED_INSTANCES with Redis down', () => {
  it('EXPECTED_INSTANCES=2, FAIL_MODE=open: a bucket of 10 admits ceil(10/2) = 5 per identity from the fallback', async () => {
    const { redis, gw } = await redisAndGateway({ FAIL_MODE: 'open', EXPECTED_INSTANCES: '2' });
    await kill9(redis);
    for (const key of ['share-a', 'share-b']) {
      const results = [];
      for (let i = 0; i < 7; i++) results.push(await send(gw, '/ten', key, `${key}-${i}`));
      expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 429, 429]);
      expect(results[0]!.ratelimit).toMatch(/^"ten\.api-key";r=4;t=\d+$/);
      expect(JSON.parse(results[5]!.body)).toMatchObject({ detail: 'Rate limit exceeded', rule: 'ten' });
      for (let i = 0; i < 7; i++) expect((await gw.logs.requestLine(`${key}-${i}`)).fellBack, `${key}-${i}`).toBe(true);
    }
  });
});
