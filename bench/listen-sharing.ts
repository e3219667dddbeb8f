/**
 * How n processes share one listening port, measured on a trivial HTTP server (100 bytes per answer, no edge work), so
 * that only the sharing differs:
 *   - single:    one process (the baseline);
 *   - cluster:   node:cluster, the primary accepting and handing each new connection to a worker in turn (round robin,
 *                the default on Linux): what WORKERS uses;
 *   - reuseport: n independent processes listening with `reusePort: true` (SO_REUSEPORT: the kernel spreads new
 *                connections), Node >= 22.12 / 23.1 on Linux only; skipped elsewhere.
 * Two kinds of load: keep-alive (autocannon, BENCH_CONNECTIONS connections: the primary works only when a connection
 * opens) and one connection per request (raw sockets, `Connection: close`: the primary handles every request's
 * connection). See bench/README.md.
 *
 *   node --import tsx bench/listen-sharing.ts                         2 processes, 5 s per run, 3 rounds (medians)
 *   BENCH_SHARING_PROCESSES=4 BENCH_SECONDS=10 node --import tsx bench/listen-sharing.ts
 */
import { fork, type ChildProcess } from 'node:child_process';
import cluster from 'node:cluster';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { freePort } from './peers/processes.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const PROCESSES = Number(process.env.BENCH_SHARING_PROCESSES ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const RESULTS = join(import.meta.dirname, 'results');
const BODY = 'x'.repeat(100);
const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
const REUSEPORT =
  process.platform === 'linux' && (major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12));

type Mode = 'single' | 'cluster' | 'reuseport';

// ---- the server side: `serve <mode> <port>` (a cluster primary, its worker, or one process) ----------------------

function serve(port: number, reusePort: boolean): void {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': BODY.length });
    res.end(BODY);
  });
  server.keepAliveTimeout = 65_000;
  server.listen({ port, host: '127.0.0.1', ...(reusePort && { reusePort: true }) }, () => process.send?.('listening'));
}

if (process.argv[2] === 'serve') {
  const mode = process.argv[3] as Mode;
  const port = Number(process.argv[4]);
  if (mode === 'cluster' && cluster.isPrimary) {
    let up = 0;
    for (let i = 0; i < PROCESSES; i++)
      cluster.fork().on('listening', () => ++up === PROCESSES && process.send?.('listening'));
  } else {
    serve(port, mode === 'reuseport');
  }
} else {
  await main();
}

// ---- the runner --------------------------------------------------------------------------------------------------

async function start(mode: Mode, port: number): Promise<ChildProcess[]> {
  const count = mode === 'reuseport' ? PROCESSES : 1;
  const children = Array.from({ length: count }, () =>
    fork(import.meta.filename, ['serve', mode, String(port)], { execArgv: process.execArgv, stdio: 'inherit' }),
  );
  await Promise.all(
    children.map(
      (c) =>
        new Promise<void>((resolve, reject) => {
          c.once('message', () => resolve());
          c.once('exit', (code) => reject(new Error(`${mode} server exited (${code}) before listening`)));
        }),
    ),
  );
  return children;
}

function stop(children: ChildProcess[]): Promise<void> {
  return Promise.all(
    children.map((c) =>
      c.exitCode !== null ? undefined : new Promise<void>((resolve) => (c.once('exit', () => resolve()), c.kill())),
    ),
  ).then(() => undefined);
}

async function keepAlive(port: number): Promise<{ rps: number; errors: number }> {
  const r = await autocannon({ url: `http://127.0.0.1:${port}/`, connections: CONNECTIONS, duration: SECONDS });
  return { rps: Math.round(r.requests.average), errors: r.errors + r.timeouts + r.non2xx };
}

/** CONNECTIONS loops, each: connect, one request with `Connection: close`, read to the end, again. */
async function connectionPerRequest(port: number): Promise<{ rps: number; errors: number }> {
  const until = Date.now() + SECONDS * 1000;
  let done = 0;
  let errors = 0;
  const once = () =>
    new Promise<void>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.setEncoding('utf8');
      socket.on('connect', () => socket.write('GET / HTTP/1.1\r\nhost: bench\r\nconnection: close\r\n\r\n'));
      socket.on('data', (d: string) => (text += d));
      socket.on('close', () => {
        if (text.startsWith('HTTP/1.1 200') && text.endsWith(BODY)) done++;
        else errors++;
        resolve();
      });
      socket.on('error', () => {});
    });
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (Date.now() < until) await once();
    }),
  );
  return { rps: Math.round(done / SECONDS), errors };
}

async function main(): Promise<void> {
  const modes: Mode[] = ['single', 'cluster', ...(REUSEPORT ? (['reuseport'] as const) : [])];
  console.log(
    `listen sharing: ${PROCESSES} processes, ${ROUNDS} rounds of ${SECONDS} s per run (medians), ${CONNECTIONS} connections, Node ${process.version}, ` +
      `${cpus().length} CPUs, load average ${loadavg()[0]!.toFixed(2)}; nothing pinned: the load generator (this ` +
      `process) competes with the servers` +
      (REUSEPORT ? '' : `; reuseport skipped (needs Node >= 22.12 / 23.1 on Linux)`),
  );
  const LOADS = ['keep-alive', 'connection per request'] as const;
  const runs: { round: number; mode: Mode; load: (typeof LOADS)[number]; rps: number; errors: number }[] = [];
  // Rounds of every mode in turn: a busy moment of the machine hurts one round of each, not one mode.
  for (let round = 1; round <= ROUNDS; round++) {
    for (const mode of modes) {
      const port = await freePort();
      const children = await start(mode, port);
      try {
        await keepAlive(port); // warm-up, dropped
        runs.push({ round, mode, load: 'keep-alive', ...(await keepAlive(port)) });
        runs.push({ round, mode, load: 'connection per request', ...(await connectionPerRequest(port)) });
      } finally {
        await stop(children);
      }
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  const rows = modes.flatMap((mode) =>
    LOADS.map((load) => {
      const these = runs.filter((r) => r.mode === mode && r.load === load);
      return {
        mode,
        load,
        rps: median(these.map((r) => r.rps)),
        errors: these.reduce((n, r) => n + r.errors, 0),
        rounds: these.map((r) => r.rps),
      };
    }),
  );
  const single = (load: string) => rows.find((r) => r.mode === 'single' && r.load === load)!.rps;
  const table = rows.map((r) => ({ ...r, 'over single': Number((r.rps / single(r.load)).toFixed(2)) }));
  console.table(table.map(({ rounds, ...r }) => ({ ...r, rounds: rounds.join(' ') })));
  const date = new Date().toISOString();
  const result = {
    benchmark: 'listen-sharing',
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    cpus: cpus().length,
    load_avg_1m: Number(loadavg()[0]!.toFixed(2)),
    date,
    processes: PROCESSES,
    seconds: SECONDS,
    rounds: ROUNDS,
    connections: CONNECTIONS,
    reuseport_supported: REUSEPORT,
    rows: table,
  };
  mkdirSync(RESULTS, { recursive: true });
  const json = JSON.stringify(result, null, 2) + '\n';
  const out = join(RESULTS, `listen-sharing-${date.replaceAll(':', '-')}.json`);
  writeFileSync(out, json);
  writeFileSync(join(RESULTS, 'listen-sharing-latest.json'), json);
  console.log(`results: ${out}`);
}
