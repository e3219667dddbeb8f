/**
 * The Agent Server's memory under sustained load: threadless streamed runs (`POST /runs/stream`, values and
 * messages-tuple) of the example graph at a fixed rate, against a base revision's Agent Server (default: where this
 * branch left `main`) and this tree's, one after the other, each in a child process of its own (`main.ts`, in-memory
 * stores) whose resident set (RSS, /proc/<pid>/status) is sampled every 500 ms. Reports RSS before the load, its peak
 * under load, at the end of the load, and after a quiet period, and the runs actually served per second; writes
 * bench/results/agent-memory-<time>.json (and agent-memory-latest.json). See bench/README.md.
 *
 *   npm run bench:agent-memory
 *   BENCH_RATE=400 BENCH_SECONDS=60 BENCH_QUIET_SECONDS=10 npm run bench:agent-memory
 *
 * Loopback only; each side's process is stopped (by its pid) before the next starts.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BASE =
  process.env.BENCH_BASE ?? execFileSync('git', ['merge-base', 'HEAD', 'main'], { cwd: ROOT }).toString().trim();
const RATE = Number(process.env.BENCH_RATE ?? 300);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 40);
const QUIET_SECONDS = Number(process.env.BENCH_QUIET_SECONDS ?? 5);
/** Runs in flight at most (a slower server is offered the same rate, never an unbounded backlog). */
const MAX_IN_FLIGHT = Number(process.env.BENCH_MAX_IN_FLIGHT ?? 64);
const KEY = 'bench-memory-key-0123456789';

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

const rssMb = (pid: number): number => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
};

/** The Agent Server of the tree at `root` in a child process, serving examples/app. */
async function start(root: string): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src/services/agent-server/main.ts')], {
    cwd: root,
    env: {
      ...process.env,
      AGENT_SERVER_PORT: String(port),
      AGENT_SERVER_API_KEYS: KEY,
      APP_CONFIG: join(root, 'examples/app/langgraph.api-key.json'),
      LOG_LEVEL: 'error',
      NODE_ENV: 'production',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`agent server at ${root} exited with ${child.exitCode}`);
    const ok = await fetch(`${url}/ok`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { url, child };
    await sleep(100);
  }
  child.kill('SIGTERM');
  throw new Error(`agent server at ${root} did not start`);
}

async function oneRun(url: string): Promise<boolean> {
  const res = await fetch(`${url}/runs/stream`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': KEY },
    body: JSON.stringify({
      assistant_id: 'agent',
      input: { messages: [{ role: 'user', content: 'how much memory does this take?' }] },
      stream_mode: ['values', 'messages-tuple'],
    }),
  });
  const text = await res.text();
  return res.ok && !text.includes('event: error');
}

async function measure(name: string, root: string) {
  const { url, child } = await start(root);
  const pid = child.pid!;
  try {
    for (let i = 0; i < 50; i++) await oneRun(url); // warm-up
    await sleep(1000);
    const idle = rssMb(pid);
    const samples: number[] = [];
    let served = 0;
    let failed = 0;
    let inFlight = 0;
    let skipped = 0;
    const sampler = setInterval(() => samples.push(rssMb(pid)), 500);
    const began = performance.now();
    const until = began + SECONDS * 1000;
    const pending = new Set<Promise<void>>();
    for (let n = 0; performance.now() < until; n++) {
      const due = began + (n * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      if (inFlight >= MAX_IN_FLIGHT) {
        skipped++;
        continue;
      }
      inFlight++;
      const p = oneRun(url)
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
    const end = rssMb(pid);
    await sleep(QUIET_SECONDS * 1000);
    clearInterval(sampler);
    return {
      side: name,
      rss_idle_mb: idle,
      rss_peak_mb: Math.max(...samples, end),
      rss_end_of_load_mb: end,
      rss_after_quiet_mb: rssMb(pid),
      runs_per_s: Math.round(served / loadSeconds),
      failed,
      skipped_over_in_flight_cap: skipped,
    };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

const dirty = () => execFileSync('git', ['status', '--porcelain', 'src'], { cwd: ROOT }).toString().trim() !== '';
const tmp = mkdtempSync(join(tmpdir(), 'bench-agent-memory-'));
try {
  const baseCommit = execFileSync('git', ['rev-parse', '--short', BASE], { cwd: ROOT }).toString().trim();
  const headCommit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim();
  const archive = execFileSync('git', ['archive', BASE, 'src', 'examples', 'package.json'], {
    cwd: ROOT,
    maxBuffer: 256 * 1024 * 1024,
  });
  writeFileSync(join(tmp, 'base.tar'), archive);
  execFileSync('tar', ['-xf', join(tmp, 'base.tar'), '-C', tmp]);
  symlinkSync(join(ROOT, 'node_modules'), join(tmp, 'node_modules'));
  const rows = [
    await measure(`base ${BASE.slice(0, 12)} (${baseCommit})`, tmp),
    await measure(`this tree (${headCommit}${dirty() ? ', uncommitted changes' : ''})`, ROOT),
  ];
  console.log(
    `threadless runs.stream of examples/app at ${RATE}/s for ${SECONDS} s (at most ${MAX_IN_FLIGHT} in flight), then ${QUIET_SECONDS} s quiet; ${cpus().length} CPUs, load ${loadavg()[0]!.toFixed(2)}`,
  );
  console.table(rows);
  const [b, h] = rows as [(typeof rows)[0], (typeof rows)[0]];
  const growth = (r: typeof b) => r.rss_peak_mb - r.rss_idle_mb;
  console.log(
    `peak RSS this tree / base: ${(h.rss_peak_mb / b.rss_peak_mb).toFixed(2)}; growth under load this tree / base: ${(growth(h) / Math.max(1, growth(b))).toFixed(2)}; runs/s this tree / base: ${(h.runs_per_s / Math.max(1, b.runs_per_s)).toFixed(2)}`,
  );
  const dir = join(ROOT, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const result = JSON.stringify({ at: new Date().toISOString(), rate: RATE, seconds: SECONDS, rows }, null, 2);
  writeFileSync(join(dir, `agent-memory-${Date.now()}.json`), result);
  writeFileSync(join(dir, 'agent-memory-latest.json'), result);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
