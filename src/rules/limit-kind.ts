import { parseDuration } from './duration.ts';
import type { RawLimit } from './schema.ts';
import type { Until } from './types.ts';

/**
 * A limit as written is a rate (`count` and `per`) or in flight (`concurrent`, with `until: response | run`, default
 * `response`); never both, never neither. The schema lets each field through on its own (so that a typo is reported
 * on its line); this says which shape the fields make, or the one line that says what to fix.
 */
export type LimitShape =
  | { readonly count: number; readonly perSeconds: number; readonly until: null }
  | { readonly count: number; readonly perSeconds: 0; readonly until: Until };

export interface ShapeProblem {
  /** The field the problem is written at. */
  readonly field: string;
  readonly reason: string;
}

export function limitShape(raw: RawLimit): LimitShape | ShapeProblem {
  if (raw.concurrent !== undefined) {
    const extra = raw.count !== undefined ? 'count' : raw.per !== undefined ? 'per' : null;
    if (extra !== null)
      return {
        field: extra,
        reason: `"${extra}" with "concurrent": a limit is a rate (count per period) or in flight (concurrent), not both`,
      };
    return { count: raw.concurrent, perSeconds: 0, until: raw.until ?? 'response' };
  }
  if (raw.until !== undefined)
    return { field: 'until', reason: '"until" belongs to an in-flight limit: add "concurrent: N" or remove it' };
  if (raw.count === undefined || raw.per === undefined) {
    const missing = raw.count === undefined ? 'count' : 'per';
    return {
      field: 'by',
      reason: `missing "${missing}": a limit is {by, count, per, category} or {by, concurrent, until, category}`,
    };
  }
  return { count: raw.count, perSeconds: parseDuration(raw.per)!, until: null };
}

export function isProblem(shape: LimitShape | ShapeProblem): shape is ShapeProblem {
  return 'reason' in shape;
}

/** The store key's scope of an in-flight limit: its slots never share a key with a rate bucket of the same name. */
export function inFlightScope(scope: string): string {
  return `${scope}.in-flight`;
}
