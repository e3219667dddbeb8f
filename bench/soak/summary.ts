/**
 * The soak's figures from what it recorded: decision accuracy per class of traffic (admitted ÷ allowed by the bucket
 * math), the edge's memory at start, warm, middle and end with the trend after warm-up, and the edge's own counts.
 */
import type { Bucket } from './client.ts';
import type { Sample } from './edge-readings.ts';
import { DIGEST_CACHE_GENERATION, IDENTITIES, MAX_GROWTH, SECONDS, TARGET_ACCURACY, WARMUP_SHARE } from './settings.ts';

export const round = (x: number, d = 4) => Number(x.toFixed(d));

export interface ClassRow {
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

/** Per class and in total: admitted against what the bucket math allows; `clean` counts buckets without errors. */
export function accuracyOf(buckets: Iterable<Bucket>) {
  const byClass = new Map<string, ClassRow>();
  /** Buckets that never saw an error: the limiter's math alone, without store faults. */
  const clean = { admitted: 0, allowed: 0 };
  for (const b of buckets) {
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
  const ok = accuracy >= TARGET_ACCURACY[0] && accuracy <= TARGET_ACCURACY[1];
  return { rows, totals, clean, accuracy, ok };
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

/** The GC samples at start, warm, middle and end, and the trend of the live heap and RSS after warm-up. */
export function memoryOf(samples: readonly Sample[], elapsed: number) {
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
  const ok =
    memory.trend_after_warmup.rss.growth <= MAX_GROWTH && memory.trend_after_warmup.heap_used.growth <= MAX_GROWTH;
  return { memory, cacheFill, cacheFullAt, warmFrom, bytesPerNewIdentity, ok };
}

/** The edge's own count of allowed and denied requests and of store errors, from its final /metrics. */
export function edgeCountsOf(finalMetrics: string) {
  return {
    allowed: sumOf(finalMetrics, 'allowed'),
    denied: sumOf(finalMetrics, 'denied'),
    store_errors: Number(/^gateway_store_errors_total\{store="redis"\} (\d+)$/m.exec(finalMetrics)?.[1] ?? 0),
  };
}

function sumOf(text: string, decision: string): number {
  let n = 0;
  for (const m of text.matchAll(
    new RegExp(`^gateway_requests_total\\{[^}]*decision="${decision}"[^}]*\\} (\\d+)$`, 'gm'),
  ))
    n += Number(m[1]);
  return n;
}
