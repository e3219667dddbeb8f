/**
 * The Agent Server's memory under sustained load, beside the official JS server's: threadless streamed runs
 * (`POST /runs/stream`, values and messages-tuple) of the example graph at a fixed rate, against up to three sides one
 * after the other (never at once), each in a child process of its own with in-memory stores and the same node flags:
 *
 *   base      this project's Agent Server at a base revision (BENCH_BASE; default where this branch left `main`, skipped
 *             when its src and examples are this tree's);
 *   this      this tree's;
 *   official  the official JS Agent Server, `@langchain/langgraph-api` (installed outside the repo on first use).
 *
 * The resident set of each server's process tree (/proc) is sampled every 500 ms (peers/memory-load.ts). Writes
 * bench/results/agent-memory-<time>.json and agent-memory-latest.json. See bench/README.md.
 *
 *   npm run bench:agent-memory
 *   BENCH_RATE=400 BENCH_SECONDS=30 BENCH_QUIET_SECONDS=65 npm run bench:agent-memory
 *
 * Loopback only; each side's process is stopped (by its pid) before the next starts.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startOfficial, startOurs, type RunningServer } from './peers/agent-server-sides.ts';
import { measureSide, type LoadSettings, type SideReading } from './peers/memory-load.ts';
import { ensureOfficialServer, OFFICIAL_VERSION } from './peers/official-install.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT }).toString().trim();
const BASE = process.env.BENCH_BASE ?? git('merge-base', 'HEAD', 'main');
const LOAD: LoadSettings = {
  rate: Number(process.env.BENCH_RATE ?? 300),
  seconds: Number(process.env.BENCH_SECONDS ?? 40),
  quietSeconds: Number(process.env.BENCH_QUIET_SECONDS ?? 5),
  maxInFlight: Number(process.env.BENCH_MAX_IN_FLIGHT ?? 64),
  heapAtEndOfLoad: process.env.BENCH_HEAP_AT_END_OF_LOAD === '1',
};
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
/** Node flags of every side's process (e.g. `--max-old-space-size=1024`), the same for all. */
const NODE_FLAGS = (process.env.BENCH_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
type SideName = 'base' | 'this' | 'official';
const SIDES = (process.env.BENCH_SIDES ?? 'base,this,official').split(',').map((s) => s.trim()) as SideName[];
for (const side of SIDES)
  if (!['base', 'this', 'official'].includes(side)) throw new Error(`BENCH_SIDES: unknown side ${side}`);

const dirty = () => git('status', '--porcelain', 'src', 'examples') !== '';
const sameAsHead = (rev: string) =>
  !dirty() && ['src', 'examples'].every((p) => git('rev-parse', `${rev}:${p}`) === git('rev-parse', `HEAD:${p}`));

/** A base revision's src, examples and package.json in a temporary folder, with this tree's node_modules. */
function extractBase(tmp: string): string {
  const dir = join(tmp, 'base');
  mkdirSync(dir);
  const archive = execFileSync('git', ['archive', BASE, 'src', 'examples', 'package.json'], {
    cwd: ROOT,
    maxBuffer: 256 * 1024 * 1024,
  });
  writeFileSync(join(tmp, 'base.tar'), archive);
  execFileSync('tar', ['-xf', join(tmp, 'base.tar'), '-C', dir]);
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

/** The mean, rounded; NaN for none (a reading not taken: JSON shows null). */
const mean = (xs: number[]) => (xs.length === 0 ? NaN : Math.round(xs.reduce((a, b) => a + b, 0) / xs.length));
const ratio = (a: number, b: number) => Number((a / Math.max(1, b)).toFixed(2));

/** Per side, the mean of its rounds. */
function summarize(rows: SideReading[]) {
  const sides = [...new Set(rows.map((r) => r.side))];
  return sides.map((side) => {
    const of = rows.filter((r) => r.side === side);
    const m = (k: keyof SideReading) => mean(of.flatMap((r) => (typeof r[k] === 'number' ? [r[k]] : [])));
    return {
      side,
      rounds: of.length,
      rss_idle_mb: m('rss_idle_mb'),
      rss_peak_mb: m('rss_peak_mb'),
      rss_end_of_load_mb: m('rss_end_of_load_mb'),
      rss_after_quiet_mb: m('rss_after_quiet_mb'),
      growth_mb: m('rss_peak_mb') - m('rss_idle_mb'),
      /** Growth under load per run served: a side that served more runs had more to hold. */
      growth_kb_per_run: Math.round(((m('rss_peak_mb') - m('rss_idle_mb')) * 1024) / Math.max(1, m('runs_served'))),
      heap_live_idle_mb: m('heap_live_idle_mb'),
      heap_live_end_of_load_mb: m('heap_live_end_of_load_mb'),
      heap_used_after_quiet_mb: m('heap_used_mb'),
      heap_live_after_quiet_mb: m('heap_live_mb'),
      /** Held after the quiet period beyond what was held before the load: kept for good (or for longer than quiet). */
      heap_kept_mb: m('heap_live_mb') - m('heap_live_idle_mb'),
      runs_per_s: m('runs_per_s'),
      failed: of.reduce((a, r) => a + r.failed, 0),
      skipped_over_in_flight_cap: of.reduce((a, r) => a + r.skipped_over_in_flight_cap, 0),
    };
  });
}

type Summary = ReturnType<typeof summarize>[number];
const ratios = (a: Summary, b: Summary) => ({
  rss_idle: ratio(a.rss_idle_mb, b.rss_idle_mb),
  rss_peak: ratio(a.rss_peak_mb, b.rss_peak_mb),
  rss_end_of_load: ratio(a.rss_end_of_load_mb, b.rss_end_of_load_mb),
  rss_after_quiet: ratio(a.rss_after_quiet_mb, b.rss_after_quiet_mb),
  growth_under_load: ratio(a.growth_mb, b.growth_mb),
  growth_per_run_served: ratio(a.growth_kb_per_run, b.growth_kb_per_run),
  heap_live_end_of_load: ratio(a.heap_live_end_of_load_mb, b.heap_live_end_of_load_mb),
  heap_live_after_quiet: ratio(a.heap_live_after_quiet_mb, b.heap_live_after_quiet_mb),
  runs_per_s: ratio(a.runs_per_s, b.runs_per_s),
});

const tmp = mkdtempSync(join(tmpdir(), 'bench-agent-memory-'));
try {
  const headCommit = git('rev-parse', '--short', 'HEAD');
  const baseCommit = git('rev-parse', '--short', BASE);
  const sides = SIDES.filter((s) => {
    if (s !== 'base' || !sameAsHead(BASE)) return true;
    console.log(`base ${baseCommit} serves the same src and examples as this tree: not measured (set BENCH_BASE)`);
    return false;
  });
  const officialDir = sides.includes('official') ? ensureOfficialServer(ROOT) : '';
  const baseDir = sides.includes('base') ? extractBase(tmp) : '';
  const label: Record<SideName, string> = {
    base: `base (${baseCommit})`,
    this: `this tree (${headCommit}${dirty() ? ', uncommitted changes' : ''})`,
    official: `official ${OFFICIAL_VERSION}`,
  };
  const start: Record<SideName, () => Promise<RunningServer>> = {
    base: () => startOurs(baseDir, NODE_FLAGS),
    this: () => startOurs(ROOT, NODE_FLAGS),
    official: () => startOfficial(officialDir, ROOT, NODE_FLAGS),
  };
  const loadBefore = loadavg()[0]!;
  const rows: SideReading[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const order = round % 2 === 1 ? sides : [...sides].reverse(); // alternated: no side always runs first
    for (const side of order) {
      const server = await start[side]();
      try {
        rows.push(await measureSide(label[side], round, server, LOAD));
      } finally {
        await server.stop();
      }
    }
  }
  const loadAfter = loadavg()[0]!;
  const flags = NODE_FLAGS.length > 0 ? NODE_FLAGS.join(' ') : 'none';
  console.log(
    `threadless runs.stream of examples/app at ${LOAD.rate}/s for ${LOAD.seconds} s (at most ${LOAD.maxInFlight} in flight), then ${LOAD.quietSeconds} s quiet; ${ROUNDS} round(s); node flags: ${flags}; ${cpus().length} CPUs, load ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after`,
  );
  console.table(rows);
  const summary = summarize(rows);
  if (ROUNDS > 1) console.table(summary);
  const find = (side: SideName) => summary.find((s) => s.side === label[side]);
  const [ours, official, base] = [find('this'), find('official'), find('base')];
  const result = {
    this_over_official: ours && official ? ratios(ours, official) : undefined,
    this_over_base: ours && base ? ratios(ours, base) : undefined,
  };
  for (const [name, r] of Object.entries(result))
    if (r) console.log(`${name.replaceAll('_', ' ')}: ${JSON.stringify(r).replaceAll('"', '').replaceAll(',', ', ')}`);
  const dir = join(ROOT, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const json = JSON.stringify(
    {
      at: new Date().toISOString(),
      load: LOAD,
      rounds: ROUNDS,
      node_flags: NODE_FLAGS,
      cpus: cpus().length,
      loadavg_1m: { before: loadBefore, after: loadAfter },
      official_version: OFFICIAL_VERSION,
      base: BASE,
      rows,
      summary,
      ratios: result,
    },
    null,
    2,
  );
  writeFileSync(join(dir, `agent-memory-${Date.now()}.json`), json);
  writeFileSync(join(dir, 'agent-memory-latest.json'), json);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
