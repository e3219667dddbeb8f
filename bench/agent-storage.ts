/**
 * The Agent Server's storage under sustained load: this tree's server (main.ts, its own process, the example graph)
 * on memory and on PostgreSQL (DATABASE_URI: a database made for the run on BENCH_DATABASE_URL's server, default the
 * machine's, dropped afterwards), one after the other in the same run, never at once. Each side: BENCH_CONCURRENCY
 * clients (default 10), each with a thread of its own, stream runs on it back to back (`POST /threads/{id}/runs/stream`,
 * values) for BENCH_SECONDS (default 20), after a warm-up; every run's time to its first event and to its end is
 * recorded, and the resident set of the server's process tree sampled every 500 ms (idle after the warm-up, peak,
 * end of the load). Prints a table; writes bench/results/agent-storage-<time>.json and agent-storage-latest.json.
 *
 *   npm run bench:agent-storage
 *   BENCH_SECONDS=60 BENCH_CONCURRENCY=20 BENCH_POOL_SIZE=10 npm run bench:agent-storage
 *
 * Loopback only; each server is stopped (by its pid) before the next starts.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { API_KEY, startOurs, type RunningServer } from './peers/agent-server-sides.ts';
import { treeRssMb } from './peers/process-rss.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 10);
const POOL_SIZE = Number(process.env.BENCH_POOL_SIZE ?? 5);
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

interface Reading {
  readonly side: string;
  readonly runs_per_s: number;
  readonly runs: number;
  readonly failed: number;
  readonly first_event_p50_ms: number;
  readonly first_event_p95_ms: number;
  readonly run_p50_ms: number;
  readonly run_p95_ms: number;
  readonly rss_idle_mb: number;
  readonly rss_peak_mb: number;
  readonly rss_end_of_load_mb: number;
  readonly peak_over_idle: number;
}

const headers = { 'content-type': 'application/json', 'x-api-key': API_KEY };
const RUN = JSON.stringify({
  assistant_id: 'agent',
  input: { messages: [{ role: 'user', content: 'where is this kept?' }] },
  stream_mode: ['values'],
});

/** One streamed run on `threadId` read to its end: ms to its first event and to its end, and whether it succeeded. */
async function oneRun(url: string, threadId: string): Promise<{ first: number; total: number; ok: boolean }> {
  const began = performance.now();
  const res = await fetch(`${url}/threads/${threadId}/runs/stream`, { method: 'POST', headers, body: RUN });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let first = NaN;
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (Number.isNaN(first) && text.includes('event:')) first = performance.now() - began;
  }
  return {
    first,
    total: performance.now() - began,
    ok: res.ok && text.includes('event: values') && !text.includes('event: error'),
  };
}

async function newThread(url: string): Promise<string> {
  const res = await fetch(`${url}/threads`, { method: 'POST', headers, body: '{}' });
  if (!res.ok) throw new Error(`POST /threads answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { thread_id: string }).thread_id;
}

const percentile = (xs: number[], p: number) => {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return Number(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!.toFixed(1));
};

async function measure(side: string, server: RunningServer): Promise<Reading> {
  const { url, pid } = server;
  const threads = await Promise.all(Array.from({ length: CONCURRENCY }, () => newThread(url)));
  const check = await oneRun(url, threads[0]!);
  if (!check.ok) throw new Error(`${side}: a streamed run did not answer as expected`);
  for (let i = 0; i < 5; i++) await Promise.all(threads.map((t) => oneRun(url, t))); // warm-up
  await sleep(1000);
  const idle = treeRssMb(pid);
  const samples: number[] = [];
  const sampler = setInterval(() => samples.push(treeRssMb(pid)), 500);
  const firsts: number[] = [];
  const totals: number[] = [];
  let failed = 0;
  const began = performance.now();
  const until = began + SECONDS * 1000;
  try {
    await Promise.all(
      threads.map(async (thread) => {
        while (performance.now() < until) {
          const r = await oneRun(url, thread).catch(() => ({ first: NaN, total: NaN, ok: false }));
          if (!r.ok) failed++;
          else {
            firsts.push(r.first);
            totals.push(r.total);
          }
        }
      }),
    );
  } finally {
    clearInterval(sampler);
  }
  const seconds = (performance.now() - began) / 1000;
  const end = treeRssMb(pid);
  const peak = Math.max(...samples, end);
  return {
    side,
    runs_per_s: Math.round(totals.length / seconds),
    runs: totals.length,
    failed,
    first_event_p50_ms: percentile(firsts, 50),
    first_event_p95_ms: percentile(firsts, 95),
    run_p50_ms: percentile(totals, 50),
    run_p95_ms: percentile(totals, 95),
    rss_idle_mb: idle,
    rss_peak_mb: peak,
    rss_end_of_load_mb: end,
    peak_over_idle: Number((peak / Math.max(1, idle)).toFixed(2)),
  };
}

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: SERVER_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

const rows: Reading[] = [];
const memory = await startOurs(ROOT, []);
try {
  rows.push(await measure('memory', memory));
} finally {
  await memory.stop();
}

const database = `gw_bench_${randomBytes(6).toString('hex')}`;
await admin(`CREATE DATABASE ${database}`);
try {
  const uri = new URL(SERVER_URL);
  uri.pathname = `/${database}`;
  const server = await startOurs(ROOT, [], { DATABASE_URI: uri.href, DATABASE_POOL_SIZE: String(POOL_SIZE) });
  try {
    rows.push(await measure('postgres', server));
  } finally {
    await server.stop();
  }
} finally {
  await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
}

console.log(
  `\nAgent Server storage: ${CONCURRENCY} clients, a thread each, streamed runs back to back for ${SECONDS} s; ` +
    `PostgreSQL pool ${POOL_SIZE}`,
);
console.table(rows);
const [mem, pgRow] = rows;
if (mem && pgRow)
  console.log(`postgres / memory: ${(pgRow.runs_per_s / Math.max(1, mem.runs_per_s)).toFixed(2)}× runs/s`);
const result = {
  when: new Date().toISOString(),
  node: process.version,
  cpus: cpus().length,
  load_avg_1m: loadavg()[0],
  concurrency: CONCURRENCY,
  seconds: SECONDS,
  pool_size: POOL_SIZE,
  rows,
};
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
const text = JSON.stringify(result, null, 2);
writeFileSync(join(ROOT, 'bench/results', `agent-storage-${result.when.replace(/:/g, '-')}.json`), text);
writeFileSync(join(ROOT, 'bench/results', 'agent-storage-latest.json'), text);
