/**
 * The load generator, run by bench/edge.ts as its own process (pinned to a
 * core of its own when taskset exists): autocannon against one URL, first a
 * warm-up whose figures are dropped, then the measured run.
 *
 * Input: one JSON argument (LoadSpec). Output on stdout, one JSON line each:
 *   {"event":"start"}            the measured run begins (the parent starts its CPU clock)
 *   {"event":"done", ...}        LoadResult
 *
 * With `keys: 1000`, every connection cycles through its own rotation of the
 * same 1,000 `x-api-key` values (request i of connection c uses key
 * (c * 37 + i) mod 1000), so concurrent requests carry different keys.
 */
import autocannon from 'autocannon';

export interface LoadSpec {
  readonly url: string;
  readonly path: string;
  readonly connections: number;
  readonly warmupSeconds: number;
  readonly seconds: number;
  /** 1 = the same key on every request; n = n keys in rotation; 0 = no key. */
  readonly keys: number;
  readonly keyPrefix: string;
}

export interface LoadResult {
  readonly rps_mean: number;
  readonly rps_total: number;
  readonly requests: number;
  readonly status: Record<string, number>;
  readonly non2xx: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly mismatches: number;
  /**
   * Latency over all responses, ms, from our own timings (autocannon's histogram has 1 ms steps and counts 2xx only).
   */
  readonly latency_ms: {
    readonly p50: number;
    readonly p90: number;
    readonly p99: number;
    readonly max: number;
    readonly mean: number;
  };
  /** autocannon's own p50/p99 (2xx only, whole ms). */
  readonly autocannon_latency_ms: { readonly p50: number; readonly p99: number };
  readonly seconds: number;
  /** This process's CPU share during the measured run, percent of one core. */
  readonly cpu_percent: number;
}

const spec = JSON.parse(process.argv[2] ?? '') as LoadSpec;

function requestsFor(connection: number): autocannon.Request[] {
  if (spec.keys <= 1) {
    const headers: Record<string, string> = spec.keys === 1 ? { 'x-api-key': `${spec.keyPrefix}-0` } : {};
    return [{ method: 'GET', path: spec.path, headers }];
  }
  return Array.from({ length: spec.keys }, (_, i) => ({
    method: 'GET' as const,
    path: spec.path,
    headers: { 'x-api-key': `${spec.keyPrefix}-${(connection * 37 + i) % spec.keys}` },
  }));
}

function run(seconds: number, onStart: () => void, onResponse?: (ms: number) => void): Promise<autocannon.Result> {
  let connection = 0;
  const instance = autocannon(
    {
      url: spec.url,
      connections: spec.connections,
      duration: seconds,
      requests: requestsFor(0),
      setupClient: (client) => client.setRequests(requestsFor(connection++)),
    },
    () => {},
  );
  instance.once('start', onStart);
  if (onResponse) instance.on('response', (_client, _status, _bytes, ms) => onResponse(ms));
  return new Promise((resolve, reject) => {
    instance.once('done', resolve);
    instance.once('error', reject);
  });
}

class Samples {
  private data = new Float64Array(1 << 20);
  length = 0;
  push(x: number): void {
    if (this.length === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.length++] = x;
  }
  sorted(): Float64Array {
    return this.data.subarray(0, this.length).sort();
  }
}

const quantile = (sorted: Float64Array, q: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const round = (x: number, digits = 2) => Number(x.toFixed(digits));

if (spec.warmupSeconds > 0) await run(spec.warmupSeconds, () => {});

const samples = new Samples();
let cpu0 = process.cpuUsage();
let t0 = performance.now();
const result = await run(
  spec.seconds,
  () => {
    cpu0 = process.cpuUsage();
    t0 = performance.now();
    console.log(JSON.stringify({ event: 'start' }));
  },
  (ms) => samples.push(ms),
);
const wallMs = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
const sorted = samples.sorted();
const status: Record<string, number> = {};
for (const [code, { count }] of Object.entries(result.statusCodeStats ?? {})) status[code] = count ?? 0;
const requests = Object.values(status).reduce((a, b) => a + b, 0);
const out: LoadResult = {
  rps_mean: round(result.requests.average, 1),
  rps_total: round((requests * 1000) / wallMs, 1),
  requests,
  status,
  non2xx: result.non2xx,
  errors: result.errors,
  timeouts: result.timeouts,
  mismatches: result.mismatches,
  latency_ms: {
    p50: round(quantile(sorted, 0.5)),
    p90: round(quantile(sorted, 0.9)),
    p99: round(quantile(sorted, 0.99)),
    max: round(sorted[sorted.length - 1] ?? NaN),
    mean: round(sorted.reduce((a, b) => a + b, 0) / (sorted.length || 1), 3),
  },
  autocannon_latency_ms: { p50: result.latency.p50, p99: result.latency.p99 },
  seconds: round(wallMs / 1000, 3),
  cpu_percent: round(((cpu.user + cpu.system) / 1000 / wallMs) * 100, 1),
};
console.log(JSON.stringify({ event: 'done', ...out }));
