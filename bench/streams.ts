/**
 * Streamed runs: concurrent `runs.stream` of the example graph (examples/app, `agent`) with the unmodified JS client,
 * against this tree's Agent Server and against a base revision's (default: where this branch left `main`), in the same process and the same
 * rounds (alternating), so a change to how runs stream is measured against what it replaces on the same machine at the
 * same moment. Reports runs per second and time to first event (the `metadata` event) per stream mode. Then, on this
 * tree's server alone, the thread-centric protocol (SDK `threads.stream`) over server-sent events and over a WebSocket
 * beside the legacy `runs.stream`, same graph and input, alternating rounds: time to first event and events per
 * second, as ratios to the legacy stream (bench/peers/protocol-streams.ts). Writes bench/results/streams-<time>.json
 * (and streams-latest.json). See bench/README.md.
 *
 *   npm run bench:streams
 *   BENCH_BASE=HEAD~3 BENCH_ROUNDS=7 BENCH_ROUND_MS=3000 BENCH_CONCURRENCY=32 npm run bench:streams
 *
 * The base revision's `src` and `examples` are extracted (`git archive`) into a temporary directory that uses this
 * tree's node_modules; nothing in the repository changes. Loopback only, in-memory stores.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client } from '@langchain/langgraph-sdk';
import pino from 'pino';
import { protocolRound, type Transport } from './peers/protocol-streams.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Default: where this branch left main (what the branch changes is measured, not what main gained since). */
const BASE =
  process.env.BENCH_BASE ?? execFileSync('git', ['merge-base', 'HEAD', 'main'], { cwd: ROOT }).toString().trim();
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const MODES: string[][] = (process.env.BENCH_MODES ?? 'values;messages;values,messages-tuple')
  .split(';')
  .map((m) => m.split(','));

interface Side {
  readonly name: string;
  readonly url: string;
  close(): Promise<void>;
}

/** The Agent Server of the tree at `root`, serving the example graph, on a free loopback port. */
async function serve(name: string, root: string): Promise<Side> {
  const { createAgentServer } = await import(pathToFileURL(join(root, 'src/services/agent-server/app.ts')).href);
  const { listen } = await import(pathToFileURL(join(root, 'src/listen/listen.ts')).href);
  const server = await createAgentServer({
    configPath: join(root, 'examples/app/langgraph.api-key.json'),
    verifyApiKey: async () => ({ org: 'bench', workspace: 'bench-ws' }),
    org: 'bench',
    log: pino({ level: 'silent' }),
  });
  const listening = await listen(server.app, 0, '127.0.0.1');
  server.sockets?.attach(listening.server); // the protocol's WebSockets (a base revision may have none)
  return {
    name,
    url: listening.url,
    async close() {
      await server.close();
      await listening.close(500);
    },
  };
}

/** One round: CONCURRENCY clients each streaming threadless runs back to back for ROUND_MS. */
async function round(side: Side, modes: string[]): Promise<{ runs: number; seconds: number; firsts: number[] }> {
  const client = new Client({ apiUrl: side.url, apiKey: 'ak-bench' });
  const firsts: number[] = [];
  let runs = 0;
  const start = performance.now();
  const until = start + ROUND_MS;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < until) {
        const began = performance.now();
        let first = true;
        const stream = client.runs.stream(null, 'agent', {
          input: { messages: [{ role: 'user', content: 'how fast is this?' }] },
          streamMode: modes as never,
        });
        for await (const chunk of stream) {
          if (first) firsts.push(performance.now() - began);
          first = false;
          if (chunk.event === 'error') throw new Error(`${side.name}: run failed: ${JSON.stringify(chunk.data)}`);
        }
        runs++;
      }
    }),
  );
  return { runs, seconds: (performance.now() - start) / 1000, firsts };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.floor((s.length - 1) / 2)]!;
};
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

const tmp = mkdtempSync(join(tmpdir(), 'bench-streams-'));
let base: Side | undefined;
let head: Side | undefined;
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
  base = await serve(`base ${BASE} (${baseCommit})`, tmp);
  head = await serve(`this tree (${headCommit}${dirty() ? ', uncommitted changes' : ''})`, ROOT);

  const rows: Record<string, unknown>[] = [];
  for (const modes of MODES) {
    const tally = new Map<Side, { rps: number[]; firsts: number[] }>([
      [base, { rps: [], firsts: [] }],
      [head, { rps: [], firsts: [] }],
    ]);
    await round(base, modes); // warm-up, both sides
    await round(head, modes);
    for (let r = 0; r < ROUNDS; r++) {
      for (const side of r % 2 === 0 ? [base, head] : [head, base]) {
        const { runs, seconds, firsts } = await round(side, modes);
        tally.get(side)!.rps.push(runs / seconds);
        tally.get(side)!.firsts.push(...firsts);
      }
    }
    for (const [side, t] of tally) {
      rows.push({
        side: side.name,
        stream_mode: modes.join('+'),
        runs_per_s: Math.round(median(t.rps)),
        runs_per_s_rounds: t.rps.map((x) => Math.round(x)),
        first_event_ms_p50: +median(t.firsts).toFixed(1),
        first_event_ms_p95: +quantile(t.firsts, 0.95).toFixed(1),
      });
    }
  }
  console.log(
    `concurrent runs.stream of examples/app (agent), ${CONCURRENCY} clients, ${ROUNDS} rounds of ${ROUND_MS} ms`,
  );
  console.table(rows.map(({ runs_per_s_rounds: _, ...r }) => r));
  for (const modes of MODES.map((m) => m.join('+'))) {
    const [b, h] = rows.filter((r) => r.stream_mode === modes) as { runs_per_s: number }[];
    console.log(`${modes}: this tree / base = ${(h!.runs_per_s / b!.runs_per_s).toFixed(2)}× runs/s`);
  }
  const protocol = await protocolRows(head);
  const result = {
    when: new Date().toISOString(),
    protocol,
    node: process.version,
    cpus: cpus().length,
    load_avg_1m: loadavg()[0],
    concurrency: CONCURRENCY,
    rounds: ROUNDS,
    round_ms: ROUND_MS,
    rows,
  };
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  const text = JSON.stringify(result, null, 2);
  writeFileSync(join(ROOT, 'bench/results', `streams-${result.when.replace(/:/g, '-')}.json`), text);
  writeFileSync(join(ROOT, 'bench/results', 'streams-latest.json'), text);
} finally {
  await head?.close();
  await base?.close();
  rmSync(tmp, { recursive: true, force: true });
}

/** The protocol over SSE and WebSocket beside the legacy runs.stream, on `side` alone (alternating rounds). */
async function protocolRows(side: Side): Promise<Record<string, unknown>[]> {
  const transports: Transport[] = ['legacy', 'sse', 'websocket'];
  const tally = new Map(
    transports.map((t) => [t, { rps: [] as number[], eps: [] as number[], firsts: [] as number[] }]),
  );
  for (const t of transports) await protocolRound(side.url, 'ak-bench', t, CONCURRENCY, ROUND_MS); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? transports : [...transports].reverse();
    for (const t of order) {
      const { runs, events, seconds, firsts } = await protocolRound(side.url, 'ak-bench', t, CONCURRENCY, ROUND_MS);
      tally.get(t)!.rps.push(runs / seconds);
      tally.get(t)!.eps.push(events / seconds);
      tally.get(t)!.firsts.push(...firsts);
    }
  }
  const rows = transports.map((t) => {
    const x = tally.get(t)!;
    return {
      transport: t === 'legacy' ? 'runs.stream (legacy SSE)' : `threads.stream (${t})`,
      runs_per_s: Math.round(median(x.rps)),
      events_per_s: Math.round(median(x.eps)),
      first_event_ms_p50: +median(x.firsts).toFixed(1),
      first_event_ms_p95: +quantile(x.firsts, 0.95).toFixed(1),
    };
  });
  console.log(
    `\nthe thread-centric protocol beside runs.stream on ${side.name}, ${CONCURRENCY} clients, ${ROUNDS} rounds`,
  );
  console.table(rows);
  const [legacy, ...others] = rows;
  for (const o of others)
    console.log(
      `${o.transport} / legacy: ${(o.events_per_s / legacy!.events_per_s).toFixed(2)}× events/s, ${(o.first_event_ms_p50 / legacy!.first_event_ms_p50).toFixed(2)}× time to first event (p50)`,
    );
  return rows;
}

function dirty(): boolean {
  return execFileSync('git', ['status', '--porcelain', 'src'], { cwd: ROOT }).toString().trim() !== '';
}
