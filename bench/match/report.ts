/**
 * The match benchmark's report (bench/match.ts): the table of both sides,
 * PASS/FAIL against the targets, the per-row breakdown (BENCH_BREAKDOWN=1)
 * and the JSON results file. See bench/README.md.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { median } from '../peers/report.ts';
import { TRAFFIC, type Region } from './mix.ts';
import { passCompiled, sinkValue, slice, SLICE_MS, type Speed } from './timing.ts';

const TARGET_MPS = 10_000_000;
const TARGET_RATIO = 5;
const RESULTS = join(import.meta.dirname, '..', 'results');

/** A finished run: its settings, the mix and the speed of each side in each round. */
export interface Run {
  readonly rounds: number;
  readonly roundMs: number;
  readonly regions: readonly Region[];
  readonly mixSize: number;
  readonly compiledRounds: readonly Speed[];
  readonly referenceRounds: readonly Speed[];
}

export function report(run: Run): void {
  const { regions, mixSize, compiledRounds, referenceRounds } = run;
  // The targets are judged on CPU time ("on one core"): on a shared machine the
  // wall clock also counts the time other processes held the core.
  const summary = (rounds: readonly Speed[]) => {
    const cpu = rounds.map((r) => r.cpu);
    return {
      mps: median(cpu),
      min: Math.min(...cpu),
      max: Math.max(...cpu),
      wallMps: median(rounds.map((r) => r.wall)),
    };
  };
  const compiled = summary(compiledRounds);
  const reference = summary(referenceRounds);
  const ratio = compiled.mps / reference.mps;
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  const row = (x: ReturnType<typeof summary>) => ({
    'matches/s (median)': fmt(x.mps),
    'min round': fmt(x.min),
    'max round': fmt(x.max),
    'ns/match': (1e9 / x.mps).toFixed(1),
    'wall-clock matches/s': fmt(x.wallMps),
  });

  console.log(
    `${run.rounds} rounds of ${run.roundMs} ms per side (alternating ${SLICE_MS} ms slices), ${mixSize} requests in the mix; per CPU-second of this process`,
  );
  console.table({ compiled: row(compiled), reference: row(reference) });
  const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
  console.log(
    `ratio compiled/reference: ${ratio.toFixed(2)}x   (node ${process.version}, load average ${loadavg()[0]!.toFixed(2)} on ${cpus().length} CPUs)`,
  );
  console.log(`${verdict(compiled.mps >= TARGET_MPS)} compiled >= ${fmt(TARGET_MPS)} matches/s (${fmt(compiled.mps)})`);
  console.log(`${verdict(ratio >= TARGET_RATIO)} compiled >= ${TARGET_RATIO}x reference (${ratio.toFixed(2)}x)`);

  if (process.env.BENCH_BREAKDOWN) breakdown(regions);

  const date = new Date().toISOString();
  const result = {
    benchmark: 'match',
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    cpus: cpus().length,
    load_avg_1m: Number(loadavg()[0]!.toFixed(2)),
    date,
    mix_size: mixSize,
    regions: regions.map((r) => r.name),
    rounds: run.rounds,
    round_ms: run.roundMs,
    slice_ms: SLICE_MS,
    compiled_mps: Math.round(compiled.mps),
    reference_mps: Math.round(reference.mps),
    ratio: Number(ratio.toFixed(3)),
    ratio_rounds: compiledRounds.map((c, i) => Number((c.cpu / referenceRounds[i]!.cpu).toFixed(3))),
    compiled_wall_mps: Math.round(compiled.wallMps),
    reference_wall_mps: Math.round(reference.wallMps),
    compiled_rounds: compiledRounds.map((r) => ({ cpu_mps: Math.round(r.cpu), wall_mps: Math.round(r.wall) })),
    reference_rounds: referenceRounds.map((r) => ({ cpu_mps: Math.round(r.cpu), wall_mps: Math.round(r.wall) })),
    targets: { compiled_mps: TARGET_MPS, ratio: TARGET_RATIO },
    pass: { compiled_mps: compiled.mps >= TARGET_MPS, ratio: ratio >= TARGET_RATIO },
    sink: sinkValue(),
  };
  mkdirSync(RESULTS, { recursive: true });
  const json = JSON.stringify(result, null, 2) + '\n';
  const file = join(RESULTS, `match-${date.replaceAll(':', '-')}.json`);
  writeFileSync(file, json);
  writeFileSync(join(RESULTS, 'match-latest.json'), json);
  console.log(`results: ${file}`);
}

/** Where the compiled matcher's time goes: each traffic row alone (all header sets, both regions). */
function breakdown(regions: readonly Region[]): void {
  const rows = TRAFFIC.map(([method, raw], t) => {
    const { matches, cpuUs } = slice(
      passCompiled,
      regions.map((r) => ({ ...r, requests: r.byRow[t]! })),
      200,
    );
    return {
      method,
      path: raw.length > 60 ? `${raw.slice(0, 57)}...` : raw,
      'ns/match': Number(((cpuUs * 1000) / matches).toFixed(1)),
    };
  });
  console.table(rows.sort((a, b) => b['ns/match'] - a['ns/match']));
}
