/**
 * Rule matching speed: the compiled matcher (src/rules/compile.ts) against the
 * naive reference (support/reference-matcher.ts) on the same pre-built mix
 * of requests, both regions, in one run. Correctness first: any disagreement
 * on the mix exits 1 before anything is timed. See bench/README.md.
 *
 *   npm run bench:match            (BENCH_ROUNDS=5 BENCH_ROUND_MS=1000 by default)
 *   BENCH_BREAKDOWN=1 npm run bench:match   also: compiled ns/match per traffic row
 */
import { REGIONS } from '../src/region.ts';
import { differencesIn } from './match/check.ts';
import { buildRegion } from './match/mix.ts';
import { report } from './match/report.ts';
import { pairedRound, passCompiled, passReference, type Speed } from './match/timing.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 1000);

// ---- the mix (match/mix.ts) -------------------------------------------------

const regions = REGIONS.map(buildRegion);
const mixSize = regions.reduce((n, r) => n + r.requests.length, 0);

// ---- correctness first -----------------------------------------------------

const differences = differencesIn(regions);
if (differences > 0) {
  console.error(`FAIL correctness: ${differences} of ${mixSize} requests differ; nothing timed.`);
  process.exit(1);
}
console.log(
  `correctness: compiled and reference agree on all ${mixSize} requests (${regions.map((r) => r.name).join(', ')})`,
);

// ---- timing (match/timing.ts) ----------------------------------------------

pairedRound([passCompiled, passReference], regions, 500); // warm-up: let both reach optimised code
const compiledRounds: Speed[] = [];
const referenceRounds: Speed[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const [c, r] = pairedRound([passCompiled, passReference], regions, ROUND_MS);
  compiledRounds.push(c!);
  referenceRounds.push(r!);
}

// ---- report (match/report.ts) ----------------------------------------------

report({ rounds: ROUNDS, roundMs: ROUND_MS, regions, mixSize, compiledRounds, referenceRounds });
