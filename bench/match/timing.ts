/**
 * The match benchmark's timing: passes over the mix with each matcher, and
 * rounds taken in alternating slices so that both sides see the same machine.
 */
import { referenceMatch } from '../../support/reference-matcher.ts';
import type { Region } from './mix.ts';

export const SLICE_MS = 50;

let sink = 0;

export type Batch = Pick<Region, 'rules' | 'matcher' | 'requests'>;

export function passCompiled(batches: readonly Batch[]): number {
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

export function passReference(batches: readonly Batch[]): number {
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

export interface Speed {
  /** matches per second of wall-clock time */
  readonly wall: number;
  /** matches per second of this process's CPU time: what one core does, whatever else runs beside it */
  readonly cpu: number;
}

export type Pass = (batches: readonly Batch[]) => number;

/** Whole passes over `batches` until `ms` of wall-clock time have elapsed. */
export function slice(pass: Pass, batches: readonly Batch[], ms: number) {
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
export function pairedRound(passes: readonly Pass[], batches: readonly Batch[], ms: number): Speed[] {
  const totals = passes.map(() => ({ matches: 0, wallNs: 0, cpuUs: 0 }));
  for (let t = 0; t < ms; t += SLICE_MS) {
    passes.forEach((pass, k) => {
      const s = slice(pass, batches, SLICE_MS);
      totals[k]!.matches += s.matches;
      totals[k]!.wallNs += s.wallNs;
      totals[k]!.cpuUs += s.cpuUs;
    });
  }
  return totals.map((x) => ({ wall: (x.matches * 1e9) / x.wallNs, cpu: (x.matches * 1e6) / x.cpuUs }));
}

/** The running sum of the results, which keeps V8 from dropping the calls as dead code. */
export function sinkValue(): number {
  return sink;
}
