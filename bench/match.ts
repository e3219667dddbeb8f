/**
 * Rule matching speed: the compiled matcher (src/rules/compile.ts) against the
 * naive reference (test/rules/reference-matcher.ts) on the same pre-built mix
 * of requests, both regions, in one run. Correctness first: any disagreement
 * on the mix exits 1 before anything is timed. See bench/README.md.
 *
 *   npm run bench:match            (BENCH_ROUNDS=5 BENCH_ROUND_MS=1000 by default)
 *   BENCH_BREAKDOWN=1 npm run bench:match   also: compiled ns/match per traffic row
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { compile, type Matcher, type MatchRequest } from '../src/rules/compile.ts';
import { REGIONS } from '../src/region.ts';
import { loadRuleFile, regionRuleFile } from '../src/rules/load.ts';
import { normalizePath } from '../src/rules/normalize-path.ts';
import type { Rule } from '../src/rules/types.ts';
import { referenceMatch } from '../test/rules/reference-matcher.ts';
import { median } from './peers/report.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 1000);
const SLICE_MS = 50;
const TARGET_MPS = 10_000_000;
const TARGET_RATIO = 5;
const RESULTS = join(import.meta.dirname, 'results');

// ---- the mix ---------------------------------------------------------------

const U1 = '3f2a9c1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b';
const U2 = 'A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF';
const LONG = `/threads/${U1}/runs/${U1}/stream/${'segment-'.repeat(12)}end/${'x'.repeat(40)}`;

/**
 * [method, raw path]: every table row (hits and near misses), Agent Server traffic the table does not name, long paths.
 */
const TRAFFIC: readonly (readonly [string, string])[] = [
  ['OPTIONS', '/threads'],
  ['GET', '/info'],
  ['POST', '/v1/metadata/submit'],
  ['POST', '/api/v1/metadata/submit'],
  ['POST', '/auth/login'],
  ['GET', '/auth'],
  ['GET', '/authx'],
  ['POST', '/v1/beacon'],
  ['GET', '/repos/org/name'],
  ['POST', '/runs/batch'],
  ['POST', '/otel/v1/traces'],
  ['POST', '/api/charts/abc'],
  ['POST', '/runs/multipart'],
  ['POST', '/runs/query'],
  ['POST', '/runs/query/'],
  ['POST', '/generate/prompt'],
  ['GET', '/commits/org/repo/abc'],
  ['DELETE', `/sessions/${U1}`],
  ['GET', '/sessions'],
  ['POST', `/datasets/${U1}/trigger`],
  ['POST', '/runs'],
  ['PATCH', `/runs/${U1}`],
  ['POST', '/feedback'],
  ['POST', '/feedback/tokens'],
  ['GET', `/runs/${U1}`],
  ['GET', `/runs/${U2}`],
  ['GET', `/api/v1/runs/${U1}`],
  ['GET', '/runs/not-a-uuid'],
  ['GET', '/datasets/examples'],
  ['GET', '/public/download/file.tar.gz'],
  ['GET', '/runs/stats'],
  ['POST', '/runs/stats/x'],
  ['GET', '/xv1/metadata/submit'],
  ['GET', '/'],
  ['GET', '/threads'],
  ['POST', '/threads/search'],
  ['GET', `/threads/${U1}`],
  ['POST', `/threads/${U1}/runs/stream`],
  ['GET', `/threads/${U1}/runs/${U1}/join`],
  ['POST', '/assistants/search'],
  ['PUT', '/store/items'],
  ['GET', '/ok'],
  ['GET', '/v2/deployments'],
  ['HEAD', '/api-host/v2/workspaces/current'],
  ['GET', LONG],
  ['POST', LONG],
  ['PATCH', LONG],
  ['GET', `${LONG}/`],
  ['PURGE', '/cache'],
  ['DELETE', `/threads/${U1}`],
];

const HEADER_SETS: readonly Record<string, string>[] = [
  {},
  { 'x-api-key': 'lsv2_pt_0123456789abcdef' },
  { 'x-user-id': 'user-42' },
  { 'x-api-key': 'lsv2_pt_0123456789abcdef', 'x-user-id': 'user-42' },
  { 'x-api-key': '' },
];

interface Region {
  readonly name: string;
  readonly rules: readonly Rule[];
  readonly matcher: Matcher;
  readonly requests: readonly MatchRequest[];
  /** Per TRAFFIC row, its requests in every header set (for BENCH_BREAKDOWN). */
  readonly byRow: readonly (readonly MatchRequest[])[];
}

function buildRegion(name: (typeof REGIONS)[number]): Region {
  const { rules } = loadRuleFile(regionRuleFile(join(import.meta.dirname, '..', 'rules'), name));
  const byRow = TRAFFIC.map(([method, raw], t) =>
    HEADER_SETS.map((headers, h) => ({
      method,
      path: normalizePath(raw),
      headers: { ...headers, accept: '*/*' },
      ip: `10.1.${h}.${t}`,
    })),
  );
  const requests = byRow.flat();
  // Shuffle deterministically so that no branch sees a long run of one shape.
  let s = 42;
  for (let i = requests.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const j = s % (i + 1);
    [requests[i], requests[j]] = [requests[j]!, requests[i]!];
  }
  return { name, rules, matcher: compile(rules), requests, byRow };
}

const regions = REGIONS.map(buildRegion);
const mixSize = regions.reduce((n, r) => n + r.requests.length, 0);

// ---- correctness first -----------------------------------------------------

let differences = 0;
for (const { name, rules, matcher, requests } of regions) {
  for (const req of requests) {
    const got = matcher.match(req);
    const want = referenceMatch(rules, req);
    const same =
      got === null
        ? want === null
        : want !== null &&
          got.rule.id === want.ruleId &&
          got.limits.map((l) => l.policy).join() === want.policies.join();
    if (!same && differences++ < 5) {
      console.error(
        `${name}: ${req.method} ${req.path} ${JSON.stringify(req.headers)}: compiled ${got ? got.rule.id : null}, reference ${want ? want.ruleId : null}`,
      );
    }
  }
}
if (differences > 0) {
  console.error(`FAIL correctness: ${differences} of ${mixSize} requests differ; nothing timed.`);
  process.exit(1);
}
console.log(
  `correctness: compiled and reference agree on all ${mixSize} requests (${regions.map((r) => r.name).join(', ')})`,
);

// ---- timing ----------------------------------------------------------------

let sink = 0;

type Batch = Pick<Region, 'rules' | 'matcher' | 'requests'>;

function passCompiled(batches: readonly Batch[]): number {
  let n = 0;
  for (let b = 0; b < batches.length; b++) {
    const { matcher, requests } = batches[b]!;
    for (let i = 0; i < requests.length; i++) {
      const m = matcher.match(requests[i]!);
      sink = (sink + (m === null ? 1 : m.limits.length + m.rule.id.length)) | 0;
    }
    n += requests.length;
  }
  return n;
}

function passReference(batches: readonly Batch[]): number {
  let n = 0;
  for (let b = 0; b < batches.length; b++) {
    const { rules, requests } = batches[b]!;
    for (let i = 0; i < requests.length; i++) {
      const m = referenceMatch(rules, requests[i]!);
      sink = (sink + (m === null ? 1 : m.policies.length + m.ruleId.length)) | 0;
    }
    n += requests.length;
  }
  return n;
}

interface Speed {
  /** matches per second of wall-clock time */
  readonly wall: number;
  /** matches per second of this process's CPU time: what one core does, whatever else runs beside it */
  readonly cpu: number;
}

type Pass = (batches: readonly Batch[]) => number;

/** Whole passes over `batches` until `ms` of wall-clock time have elapsed. */
function slice(pass: Pass, batches: readonly Batch[], ms: number) {
  const budget = BigInt(Math.round(ms * 1e6));
  const cpu0 = process.cpuUsage();
  const start = process.hrtime.bigint();
  let matches = 0;
  let elapsed = 0n;
  do {
    matches += pass(batches);
    elapsed = process.hrtime.bigint() - start;
  } while (elapsed < budget);
  const cpu = process.cpuUsage(cpu0);
  return { matches, wallNs: Number(elapsed), cpuUs: cpu.user + cpu.system };
}

/**
 * One round: `ms` for each side, taken in alternating slices of SLICE_MS, so
 * that both sides see the same machine (this one is shared, and its speed
 * moves by several times within seconds).
 */
function pairedRound(passes: readonly Pass[], ms: number): Speed[] {
  const totals = passes.map(() => ({ matches: 0, wallNs: 0, cpuUs: 0 }));
  for (let t = 0; t < ms; t += SLICE_MS) {
    passes.forEach((pass, k) => {
      const s = slice(pass, regions, SLICE_MS);
      totals[k]!.matches += s.matches;
      totals[k]!.wallNs += s.wallNs;
      totals[k]!.cpuUs += s.cpuUs;
    });
  }
  return totals.map((x) => ({ wall: (x.matches * 1e9) / x.wallNs, cpu: (x.matches * 1e6) / x.cpuUs }));
}

pairedRound([passCompiled, passReference], 500); // warm-up: let both reach optimised code
const compiledRounds: Speed[] = [];
const referenceRounds: Speed[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const [c, r] = pairedRound([passCompiled, passReference], ROUND_MS);
  compiledRounds.push(c!);
  referenceRounds.push(r!);
}

// The targets are judged on CPU time ("on one core"): on a shared machine the
// wall clock also counts the time other processes held the core.
const summary = (rounds: readonly Speed[]) => {
  const cpu = rounds.map((r) => r.cpu);
  return { mps: median(cpu), min: Math.min(...cpu), max: Math.max(...cpu), wallMps: median(rounds.map((r) => r.wall)) };
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
  `${ROUNDS} rounds of ${ROUND_MS} ms per side (alternating ${SLICE_MS} ms slices), ${mixSize} requests in the mix; per CPU-second of this process`,
);
console.table({ compiled: row(compiled), reference: row(reference) });
const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
console.log(
  `ratio compiled/reference: ${ratio.toFixed(2)}x   (node ${process.version}, load average ${loadavg()[0]!.toFixed(2)} on ${cpus().length} CPUs)`,
);
console.log(`${verdict(compiled.mps >= TARGET_MPS)} compiled >= ${fmt(TARGET_MPS)} matches/s (${fmt(compiled.mps)})`);
console.log(`${verdict(ratio >= TARGET_RATIO)} compiled >= ${TARGET_RATIO}x reference (${ratio.toFixed(2)}x)`);

if (process.env.BENCH_BREAKDOWN) {
  // Where the compiled matcher's time goes: each traffic row alone (all header sets, both regions).
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
  rounds: ROUNDS,
  round_ms: ROUND_MS,
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
  sink,
};
mkdirSync(RESULTS, { recursive: true });
const json = JSON.stringify(result, null, 2) + '\n';
const file = join(RESULTS, `match-${date.replaceAll(':', '-')}.json`);
writeFileSync(file, json);
writeFileSync(join(RESULTS, 'match-latest.json'), json);
console.log(`results: ${file}`);
