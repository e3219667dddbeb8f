import { expect } from 'vitest';
import type { TestGateway } from './gateway.ts';
import { sleep, stats, type Sample, type Stats } from './load.ts';
import { MARGIN_MS, STORE_TIMEOUT_MS } from './redis-outage.ts';
import { metricValue, scrapeMetrics } from './scrape-metrics.ts';

/**
 * What the store-fault tests measure and check during an outage: the latency bound and the breaker's error counts
 * (both explained in redis-outage.ts), the request log, and the 503 a failing store answers.
 */

/** The `request` log line of every sample, waiting (bounded) for lines not yet written. */
export async function requestLines(
  gw: TestGateway,
  samples: readonly Sample[],
  timeoutMs = 3000,
): Promise<Map<string, Record<string, unknown>>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const byId = new Map(
      gw.logs
        .lines()
        .filter((l) => l.msg === 'request')
        .map((l) => [String(l.requestId), l] as const),
    );
    const missing = samples.filter((s) => !byId.has(s.id));
    if (missing.length === 0) return byId;
    if (Date.now() > deadline)
      throw new Error(`no request log line for ${missing.length} requests, e.g. ${missing[0]!.id}`);
    await sleep(50);
  }
}

/**
 * Latency of the store and control requests started in [from, to), the bound the store requests must keep, and the
 * store requests' p99 before the fault (for the report only).
 */
export function outageLatency(
  samples: readonly Sample[],
  storePath: string,
  faultAt: number,
  loopDelayMs: number,
  from: number,
  to = Infinity,
) {
  const inWindow = samples.filter((s) => s.start >= from && s.start < to);
  const store = stats(inWindow.filter((s) => s.path === storePath));
  const control = stats(inWindow.filter((s) => s.path === '/control'));
  const before = stats(samples.filter((s) => s.path === storePath && s.end < faultAt));
  // A bound needs control requests to measure it by.
  expect(control.n, 'control requests in the outage').toBeGreaterThanOrEqual(5);
  return { store, control, before, loopDelayMs, bound: control.p99 + STORE_TIMEOUT_MS + loopDelayMs + MARGIN_MS };
}

export function report(what: string, l: ReturnType<typeof outageLatency>, counts: Record<number, number>): void {
  const f = (s: Stats) => `n ${s.n} p50 ${s.p50.toFixed(1)} p99 ${s.p99.toFixed(1)} max ${s.max.toFixed(1)}`;
  console.info(
    `[${what}] outage: store requests ${f(l.store)} ms; control ${f(l.control)} ms; worst loop delay ${l.loopDelayMs.toFixed(1)} ms; bound ${l.bound.toFixed(1)} ms; ` +
      `store requests before the fault: ${f(l.before)} ms; statuses ${JSON.stringify(counts)}`,
  );
}

export async function metrics(gw: TestGateway): Promise<string> {
  return scrapeMetrics(gw.gateway.admin.port);
}

/** Store errors between two scrapes: slower than 25 ms (paid the budget), and faster. */
export function storeErrorsBetween(before: string, after: string): { slow: number; fast: number } {
  const count = (t: string) => metricValue(t, 'gateway_store_duration_seconds_count', { result: 'error' });
  const fastCount = (t: string) =>
    metricValue(t, 'gateway_store_duration_seconds_bucket', { result: 'error', le: '0.025' });
  const fast = fastCount(after) - fastCount(before);
  return { fast, slow: count(after) - count(before) - fast };
}

/** "Store failing" is logged once per failing period, not per request: at most once more than the circuit closed. */
export function expectFailureLoggedPerTransition(gw: TestGateway): void {
  const lines = gw.logs.lines();
  const failing = lines.filter((l) => l.msg === 'rate limit store failing').length;
  const closed = lines.filter((l) => l.msg === 'rate limit store circuit closed').length;
  expect(failing).toBeGreaterThanOrEqual(1);
  expect(failing).toBeLessThanOrEqual(closed + 1);
}

export function expectStoreUnavailable(s: Sample): void {
  expect(s.status, s.id).toBe(503);
  expect(JSON.parse(s.body ?? 'null'), s.id).toEqual({ detail: expect.any(String), code: 'store_unavailable' });
}
