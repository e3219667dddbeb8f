import { request } from 'undici';

/** Prometheus text from the admin listener's /metrics. */
export async function scrapeMetrics(adminPort: number): Promise<string> {
  const res = await request(`http://127.0.0.1:${adminPort}/metrics`, { headersTimeout: 5000, bodyTimeout: 5000 });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`/metrics answered ${res.statusCode}: ${text.slice(0, 200)}`);
  return text;
}

/**
 * The sum of every sample of `name` whose labels include `labels` (all of
 * them, exact values); 0 when there is none. Enough of the text format for
 * counters, gauges and histogram series (`x_bucket`, `x_count`).
 */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = new Map<string, string>();
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) have.set(l[1]!, l[2]!);
    if (Object.entries(labels).every(([k, v]) => have.get(k) === v)) sum += Number(m[3]);
  }
  return sum;
}

/**
 * Scrapes until `name{labels}` satisfies `ok`, up to `timeoutMs`; returns the last value seen. `between` runs before
 * each retry (e.g. a request that lets the breaker probe).
 */
export async function waitForMetric(
  adminPort: number,
  name: string,
  labels: Record<string, string>,
  ok: (v: number) => boolean,
  {
    timeoutMs = 3000,
    everyMs = 50,
    between,
  }: { timeoutMs?: number; everyMs?: number; between?: () => Promise<unknown> } = {},
): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = metricValue(await scrapeMetrics(adminPort), name, labels);
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`${name}${JSON.stringify(labels)} still ${v} after ${timeoutMs} ms`);
    await between?.();
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
