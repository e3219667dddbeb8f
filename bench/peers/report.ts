/**
 * The edge benchmark's arithmetic and printing: medians of the rounds per
 * scenario, the table, side-by-side ratios (req/s, per CPU-second, per
 * round) and the notes on what else held the tested core.
 */
import { cpus, loadavg } from 'node:os';
import type { Measured } from './measure.ts';

export const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const round2 = (x: number) => Math.round(x * 100) / 100;
const fix3 = (x: number) => Number(x.toFixed(3));
const medianOrNull = (xs: readonly (number | null)[]) =>
  xs.some((x) => x === null) ? null : round2(median(xs as number[]));

/** req/s counting 2xx answers only: a fast 503 or 429 is not throughput. */
const goodRps = (m: Measured) => {
  const ok = Object.entries(m.status).reduce((n, [code, count]) => (code.startsWith('2') ? n + count : n), 0);
  return m.requests > 0 ? (m.rps_mean * ok) / m.requests : 0;
};
/** 2xx answers per CPU-second of the process under test (whole), or null when its CPU time was not read. */
const goodPerCpu = (m: Measured) => (m.proxy_cpu_percent ? Math.round(goodRps(m) / (m.proxy_cpu_percent / 100)) : null);

/** One scenario over its rounds: the median of each figure; counts of failures summed. */
export function scenarioRow<S extends string>(scenario: S, label: string, keys: number, all: readonly Measured[]) {
  return {
    scenario,
    label,
    keys,
    rps_all: Math.round(median(all.map((m) => m.rps_mean))),
    rps: Math.round(median(all.map(goodRps))),
    p50_ms: round2(median(all.map((m) => m.latency_ms.p50))),
    p99_ms: round2(median(all.map((m) => m.latency_ms.p99))),
    non2xx: all.reduce((n, m) => n + m.non2xx, 0),
    errors: all.reduce((n, m) => n + m.errors + m.timeouts, 0),
    proxy_cpu_percent: medianOrNull(all.map((m) => m.proxy_cpu_percent)),
    /** Requests per CPU-second of the process under test: its cost per request, whatever else held its core. */
    rps_per_cpu: medianOrNull(all.map(goodPerCpu)),
    proxy_core_others_percent: medianOrNull(all.map((m) => m.proxy_core_others_percent)),
    proxy_core_irq_percent: medianOrNull(all.map((m) => m.proxy_core_irq_percent)),
    proxy_core_steal_percent: medianOrNull(all.map((m) => m.proxy_core_steal_percent)),
    loadgen_cpu_percent: median(all.map((m) => m.cpu_percent)),
    upstream_cpu_percent: medianOrNull(all.map((m) => m.upstream_cpu_percent)),
    redis_cpu_percent: medianOrNull(all.map((m) => m.redis_cpu_percent)),
    rounds: all,
  };
}
type Row = ReturnType<typeof scenarioRow>;

const pct = (x: number | null) => (x === null ? 'n/a' : `${x.toFixed(0)} %`);

export function printTable(rows: readonly Row[]): void {
  console.table(
    rows.map((r) => ({
      scenario: r.label,
      keys: r.keys,
      'req/s (mean)': r.rps_all.toLocaleString('en-US'),
      '2xx/s': r.rps.toLocaleString('en-US'),
      'p50 ms': r.p50_ms,
      'p99 ms': r.p99_ms,
      'non-2xx': r.non2xx,
      errors: r.errors,
      'proxy CPU': pct(r.proxy_cpu_percent),
      'req per CPU-s': r.rps_per_cpu?.toLocaleString('en-US') ?? 'n/a',
      'rest of its core': pct(r.proxy_core_others_percent),
      'loadgen CPU': pct(r.loadgen_cpu_percent),
    })),
  );
}

/** A side-by-side comparison: [scenario a, its keys, scenario b, its keys], read as a ÷ b. */
type Pair = readonly [string, number, string, number];

/**
 * Each pair's ratio four ways: of the medians' req/s; of their requests per
 * CPU-second (immune to what else ran on the core); and within each round,
 * of both (both sides measured minutes apart at most, or at the same time
 * side by side: the spread says how far to trust the median). A pair with a
 * side that did not run is null / [].
 */
export function pairRatios<P extends Record<string, Pair>>(pairs: P, rows: readonly Row[]) {
  const find = (scenario: string, keys: number) => rows.find((r) => r.scenario === scenario && r.keys === keys);
  const each = <T>(f: (a: Row | undefined, b: Row | undefined) => T) =>
    Object.fromEntries(
      Object.entries(pairs).map(([name, [a, ka, b, kb]]) => [name, f(find(a, ka), find(b, kb))]),
    ) as Record<keyof P, T>;
  return {
    ratios: each((x, y) => (x && y && y.rps > 0 ? fix3(x.rps / y.rps) : null)),
    perCpu: each((x, y) => (x?.rps_per_cpu && y?.rps_per_cpu ? fix3(x.rps_per_cpu / y.rps_per_cpu) : null)),
    perRound: each((x, y) => (x && y ? x.rounds.map((m, i) => fix3(goodRps(m) / goodRps(y.rounds[i]!))) : [])),
    perCpuRound: each((x, y) =>
      x && y
        ? x.rounds.map((m, i) => {
            const [a, b] = [goodPerCpu(m), goodPerCpu(y.rounds[i]!)];
            return a === null || b === null ? null : fix3(a / b);
          })
        : [],
    ),
  };
}

export const showRatio = (x: number | null | undefined) => (x == null ? 'n/a' : `${x.toFixed(2)}x`);

/** What else shaped the figures: non-2xx answers, other work on the tested core, and the hypervisor's steal. */
export function machineNotes(rows: readonly Row[], { sideBySide = false } = {}): string[] {
  const notes: string[] = [];
  const denied = rows.filter((r) => r.non2xx > 0);
  if (denied.length > 0) {
    notes.push(
      `note: non-2xx answers in ${denied.map((r) => `${r.scenario}/${r.keys} (${JSON.stringify(r.rounds.map((m) => m.status))})`).join(', ')}`,
    );
  }
  // Side by side, the others on the tested core are the other targets: that is the method, not noise.
  const crowded = sideBySide ? [] : rows.filter((r) => (r.proxy_core_others_percent ?? 0) > 10);
  if (crowded.length > 0) {
    notes.push(
      `note: other work took more than 10 % of the tested core in ${crowded.length} of ${rows.length} scenarios ` +
        `(load average ${loadavg()[0]!.toFixed(2)} on ${cpus().length} CPUs): req/s understates those targets; compare "req per CPU-s" and rerun on a quieter machine`,
    );
  }
  const stolen = rows.flatMap((r) =>
    r.rounds.flatMap((m, i) =>
      (m.proxy_core_steal_percent ?? 0) > 10
        ? [`${r.scenario}/${r.keys} round ${i + 1} (${m.proxy_core_steal_percent} %)`]
        : [],
    ),
  );
  if (stolen.length > 0) {
    notes.push(
      `note: the hypervisor took more than 10 % of the tested core (steal) in ${stolen.length} measured runs: ${stolen.join(', ')}. ` +
        'Their req/s and p99 measure the host, not the target: read the per-round ratios of runs without steal, or rerun',
    );
  }
  return notes;
}
