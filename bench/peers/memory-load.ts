/**
 * One side of bench/agent-memory.ts: threadless streamed runs (`POST /runs/stream`, values and messages-tuple) of the
 * example graph offered to a running Agent Server at a fixed rate, at most `maxInFlight` at once (a slower server is
 * offered the same rate, never an unbounded backlog; what could not be sent is counted, not queued), while the RSS of
 * its process tree is sampled every 500 ms: after a warm-up, at its peak under load, at the end of the load, and after
 * a quiet period; then the server's V8 heap in use, and what of it a full GC leaves (heap-probe.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { API_KEY, type HeapReading, type RunningServer } from './agent-server-sides.ts';
import { treeRssMb } from './process-rss.ts';

export interface LoadSettings {
  readonly rate: number;
  readonly seconds: number;
  readonly quietSeconds: number;
  readonly maxInFlight: number;
  /** Also probe the heap at the end of the load (a full GC there: the RSS after the quiet period then follows it). */
  readonly heapAtEndOfLoad: boolean;
}

export interface SideReading extends Partial<HeapReading> {
  readonly side: string;
  readonly round: number;
  readonly rss_idle_mb: number;
  /** The heap a full GC leaves after the warm-up: what `heap_live_mb` (after the quiet period) compares to. */
  readonly heap_live_idle_mb?: number;
  readonly rss_peak_mb: number;
  readonly rss_end_of_load_mb: number;
  readonly rss_after_quiet_mb: number;
  readonly runs_per_s: number;
  readonly runs_served: number;
  readonly failed: number;
  readonly skipped_over_in_flight_cap: number;
  /** With heapAtEndOfLoad: the heap in use at the end of the load, and what a full GC leaves of it (held runs). */
  readonly heap_used_end_of_load_mb?: number;
  readonly heap_live_end_of_load_mb?: number;
}

const RUN = JSON.stringify({
  assistant_id: 'agent',
  input: { messages: [{ role: 'user', content: 'how much memory does this take?' }] },
  stream_mode: ['values', 'messages-tuple'],
});

/** One streamed run read to its end: whether it succeeded (2xx, every event but an error, and its `values`). */
async function oneRun(url: string): Promise<boolean> {
  const res = await fetch(`${url}/runs/stream`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': API_KEY },
    body: RUN,
  });
  const text = await res.text();
  return res.ok && text.includes('event: values') && !text.includes('event: error');
}

/** Checks one run answers as expected before anything is measured (a side that fails every run measures nothing). */
async function checkOneRun(side: string, url: string): Promise<void> {
  const res = await fetch(`${url}/runs/stream`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': API_KEY },
    body: RUN,
  });
  const text = await res.text();
  if (!res.ok || !text.includes('I am a local model') || text.includes('event: error'))
    throw new Error(`${side}: a streamed run did not answer as expected (${res.status}): ${text.slice(0, 300)}`);
}

export async function measureSide(
  side: string,
  round: number,
  server: RunningServer,
  load: LoadSettings,
): Promise<SideReading> {
  const { url, pid } = server;
  await checkOneRun(side, url);
  for (let i = 0; i < 50; i++) await oneRun(url); // warm-up
  await sleep(1000);
  const idle = treeRssMb(pid);
  const idleHeap = await server.heap(); // its full GC frees the warm-up's garbage before the load
  const samples: number[] = [];
  let served = 0;
  let failed = 0;
  let inFlight = 0;
  let skipped = 0;
  const sampler = setInterval(() => samples.push(treeRssMb(pid)), 500);
  try {
    const began = performance.now();
    const until = began + load.seconds * 1000;
    const pending = new Set<Promise<void>>();
    for (let n = 0; performance.now() < until; n++) {
      const wait = began + (n * 1000) / load.rate - performance.now();
      if (wait > 0) await sleep(wait);
      if (inFlight >= load.maxInFlight) {
        skipped++;
        continue;
      }
      inFlight++;
      const p: Promise<void> = oneRun(url)
        .then((ok) => (ok ? served++ : failed++))
        .catch(() => failed++)
        .finally(() => {
          inFlight--;
          pending.delete(p);
        })
        .then(() => undefined);
      pending.add(p);
    }
    await Promise.all(pending);
    const loadSeconds = (performance.now() - began) / 1000;
    const end = treeRssMb(pid);
    const atEnd = load.heapAtEndOfLoad ? await server.heap() : undefined;
    await sleep(load.quietSeconds * 1000);
    const afterQuiet = treeRssMb(pid);
    return {
      side,
      round,
      rss_idle_mb: idle,
      heap_live_idle_mb: idleHeap?.heap_live_mb,
      rss_peak_mb: Math.max(...samples, end),
      rss_end_of_load_mb: end,
      rss_after_quiet_mb: afterQuiet,
      runs_per_s: Math.round(served / loadSeconds),
      runs_served: served,
      failed,
      skipped_over_in_flight_cap: skipped,
      ...(atEnd && { heap_used_end_of_load_mb: atEnd.heap_used_mb, heap_live_end_of_load_mb: atEnd.heap_live_mb }),
      ...(await server.heap()),
    };
  } finally {
    clearInterval(sampler);
  }
}
