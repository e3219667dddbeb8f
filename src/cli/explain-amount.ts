import type { Limit } from '../rules/types.ts';

/** A limit's numbers as explain shows them: a rate (`count`, `per_seconds`) or in flight (`concurrent`, `until`). */
export interface Amount {
  readonly count?: number;
  readonly per_seconds?: number;
  readonly concurrent?: number;
  readonly until?: string;
}

export function amountOf(l: Limit): Amount {
  return l.until === null ? { count: l.count, per_seconds: l.perSeconds } : { concurrent: l.count, until: l.until };
}

export function amountText(a: Amount): string {
  if (a.concurrent !== undefined)
    return `${a.concurrent} in flight (a slot held until the ${a.until === 'run' ? 'run the response starts' : 'response'} ends)`;
  return `${a.count} per ${a.per_seconds}s`;
}
