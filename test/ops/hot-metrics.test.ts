import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HotCounter, HotHistogram } from '../../src/metrics/hot-metrics.ts';

/**
 * The request-path metrics must read exactly like prom-client's own: the
 * same observations go to both, and the scraped text is compared line by line.
 */
const BOUNDS = [0.001, 0.01, 0.1, 1];
const OBSERVED: [Record<'upstream' | 'status', string | number>, number][] = [
  [{ upstream: 'agent-server', status: 200 }, 0.0004],
  [{ upstream: 'agent-server', status: 200 }, 0.001], // on a bound: counted in that bucket
  [{ upstream: 'agent-server', status: 200 }, 0.05],
  [{ upstream: 'control-plane', status: 502 }, 3],
  [{ upstream: 'agent-server', status: 200 }, 0.5],
  [{ upstream: 'a"quoted\\name', status: 404 }, 0.002],
];

describe('hot metrics', () => {
  it('a histogram scrapes exactly as prom-client would write it', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const hot = new HotHistogram(ours, 'h_seconds', 'help text', ['upstream', 'status'], BOUNDS);
    const ref = new Histogram({
      name: 'h_seconds',
      help: 'help text',
      labelNames: ['upstream', 'status'],
      buckets: BOUNDS,
      registers: [theirs],
    });
    for (const [labels, v] of OBSERVED) {
      hot.observe(labels, v);
      ref.observe(labels, v);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it('a counter scrapes exactly as prom-client would write it, and reset empties it', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const hot = new HotCounter(ours, 'c_total', 'help text', ['rule', 'status']);
    const ref = new Counter({
      name: 'c_total',
      help: 'help text',
      labelNames: ['rule', 'status'],
      registers: [theirs],
    });
    for (const labels of [
      { rule: 'a', status: 200 },
      { rule: 'b', status: 429 },
      { rule: 'a', status: 200 },
      { rule: 'a', status: '200' },
    ]) {
      hot.inc(labels);
      ref.inc(labels);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.metrics()).toContain('c_total{rule="a",status="200"} 3');
    ours.resetMetrics();
    expect(await ours.metrics()).toBe('# HELP c_total help text\n# TYPE c_total counter\n');
  });
});
