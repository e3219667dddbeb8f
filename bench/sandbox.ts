/**
 * What the revision sandbox costs: a revision's start time (spawn → its app loaded and listening) and requests per
 * CPU-second of its processes (`GET /ok` on its Agent Server's socket, CPU of every process under it, from /proc), in
 * three modes in the same run, alternating: `netns` (bubblewrap in a network namespace of its own, egress through
 * pasta: what revisions get), `bwrap` (bubblewrap on the host's network) and `off` (neither). Correctness first: each
 * start must answer `/ok` 200, or the run exits 1 before anything is timed.
 *
 *   npm run bench:sandbox                  5 starts and 10 s of load per mode (BENCH_STARTS, BENCH_SECONDS)
 *   BENCH_QUICK=1 npm run bench:sandbox    smoke test: 2 starts, 2 s
 *
 * Every mode has the same cgroup limits and serves on a Unix socket; only the sandbox and the network differ. The load generator runs in this process (not counted:
 * only the revision's CPU is). See bench/README.md.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Pool } from 'undici';
import { probeNetwork } from '../src/services/revision-host/local/sandbox/network.ts';
import { targetSocketPath } from '../src/proxy/socket-target.ts';
import { LocalProcessHost } from '../src/services/revision-host/local/local-process-host.ts';
import type { RunningRevision } from '../src/services/revision-host/revision-host.ts';
import { QUICK, RESULTS, runId } from './peers/edge-settings.ts';

const STARTS = Number(process.env.BENCH_STARTS ?? (QUICK ? 2 : 5));
const SECONDS = Number(process.env.BENCH_SECONDS ?? (QUICK ? 2 : 10));
const CONNECTIONS = 16;
const TICK = 100; // USER_HZ of /proc/<pid>/stat on Linux
type Mode = 'netns' | 'bwrap' | 'off';
const MODES: readonly Mode[] = ['netns', 'bwrap', 'off'];
const network = await probeNetwork('pasta', []);

const app = mkdtempSync(join(tmpdir(), 'bench-sandbox-app-'));
writeFileSync(join(app, 'langgraph.json'), JSON.stringify({ graphs: { echo: './graph.ts:graph' } }));
writeFileSync(
  join(app, 'graph.ts'),
  `import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
const State = Annotation.Root({ text: Annotation<string>() });
export const graph = new StateGraph(State).addNode('n', async () => ({})).addEdge(START, 'n').addEdge('n', END).compile();
`,
);
const hosts = Object.fromEntries(
  MODES.map((mode) => [
    mode,
    new LocalProcessHost({
      log: pino({ level: 'warn' }),
      redis: null,
      verifyKey: async () => null,
      loadTimeoutMs: 60_000,
      sandbox: mode === 'off' ? 'off' : 'bwrap',
      ...(mode === 'netns' && { network }),
      trustAllTenants: true,
    }),
  ]),
) as Record<Mode, LocalProcessHost>;

let n = 0;
async function start(mode: Mode): Promise<{ proc: RunningRevision; ms: number }> {
  const t0 = performance.now();
  const proc = await hosts[mode].start({
    deploymentId: 'bench',
    revisionId: `${mode}-${++n}`,
    appDir: app,
    configPath: 'langgraph.json',
    org: 'default',
    env: {},
    memoryMb: 256,
    dataPrefix: `bench-${runId}`,
  });
  return { proc, ms: performance.now() - t0 };
}

/** CPU ticks of `root` and every process under it (bwrap, its init, node). */
function treeTicks(root: number): number {
  const stats = new Map<number, { ppid: number; ticks: number }>();
  for (const p of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const f = readFileSync(`/proc/${p}/stat`, 'utf8');
      const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
      stats.set(Number(p), { ppid: Number(rest[1]), ticks: Number(rest[11]) + Number(rest[12]) });
    } catch {
      // gone
    }
  }
  const under = (pid: number): boolean => pid === root || (pid > 1 && under(stats.get(pid)?.ppid ?? 0));
  let sum = 0;
  for (const [pid, s] of stats) if (under(pid)) sum += s.ticks;
  return sum;
}

async function load(proc: RunningRevision): Promise<{ requests: number; cpuSeconds: number; wallSeconds: number }> {
  const socketPath = targetSocketPath(proc.target)!;
  const pool = new Pool('http://localhost', { socketPath, connections: CONNECTIONS, pipelining: 1 });
  const ticks0 = treeTicks(proc.pid!);
  const t0 = performance.now();
  const until = t0 + SECONDS * 1000;
  let requests = 0;
  const worker = async () => {
    while (performance.now() < until) {
      const res = await pool.request({ path: '/ok', method: 'GET' });
      await res.body.dump();
      if (res.statusCode !== 200) throw new Error(`/ok answered ${res.statusCode}`);
      requests++;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  const wallSeconds = (performance.now() - t0) / 1000;
  const cpuSeconds = (treeTicks(proc.pid!) - ticks0) / TICK;
  await pool.close();
  return { requests, cpuSeconds, wallSeconds };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

// Correctness: every mode serves.
for (const mode of MODES) {
  const { proc } = await start(mode);
  const ok = await proc.health();
  await proc.stop(0);
  if (!ok) {
    console.error(`FAIL: the ${mode} revision does not answer /ok`);
    process.exit(1);
  }
}

const startMs: Record<Mode, number[]> = { netns: [], bwrap: [], off: [] };
const perCpu: Record<Mode, number[]> = { netns: [], bwrap: [], off: [] };
const wall: Record<Mode, number[]> = { netns: [], bwrap: [], off: [] };
for (let i = 0; i < STARTS; i++) {
  for (const mode of i % 2 === 0 ? MODES : [...MODES].reverse()) {
    const { proc, ms } = await start(mode);
    startMs[mode].push(ms);
    if (i === 0 || i === STARTS - 1) {
      const r = await load(proc);
      perCpu[mode].push(r.requests / r.cpuSeconds);
      wall[mode].push(r.requests / r.wallSeconds);
    }
    await proc.stop(0);
  }
}
for (const h of Object.values(hosts)) await h.close();
rmSync(app, { recursive: true, force: true });

const rows = MODES.map((mode) => ({
  mode,
  start_ms_median: Math.round(median(startMs[mode])),
  start_ms: startMs[mode].map(Math.round),
  requests_per_cpu_second: Math.round(median(perCpu[mode])),
  requests_per_cpu_second_rounds: perCpu[mode].map(Math.round),
  wall_requests_per_second: Math.round(median(wall[mode])),
}));
const [netns, sb, off] = rows as [(typeof rows)[0], (typeof rows)[0], (typeof rows)[0]];
console.table(rows.map(({ start_ms: _s, requests_per_cpu_second_rounds: _r, ...r }) => r));
const ratio = (a: number, b: number) => Math.round((a / b) * 1000) / 1000;
const summary = {
  start_ms_added: sb.start_ms_median - off.start_ms_median,
  cpu_ratio: ratio(sb.requests_per_cpu_second, off.requests_per_cpu_second),
  netns_start_ms_added: netns.start_ms_median - sb.start_ms_median,
  netns_cpu_ratio: ratio(netns.requests_per_cpu_second, sb.requests_per_cpu_second),
};
console.log(`bwrap adds ${summary.start_ms_added} ms at start; requests per CPU-second ratio ${summary.cpu_ratio}`);
console.log(
  `its network namespace adds ${summary.netns_start_ms_added} ms more; requests per CPU-second ratio ${summary.netns_cpu_ratio} (netns/bwrap)`,
);
mkdirSync(RESULTS, { recursive: true });
const json = JSON.stringify(
  {
    bench: 'sandbox',
    runId,
    seconds: SECONDS,
    starts: STARTS,
    load_avg_1m: loadavg()[0],
    cpus: cpus().length,
    rows,
    summary,
  },
  null,
  2,
);
const out = join(RESULTS, `sandbox-${runId}.json`);
writeFileSync(out, json);
writeFileSync(join(RESULTS, 'sandbox-latest.json'), json);
console.log(`results: ${out}`);
