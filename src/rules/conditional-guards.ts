import { compileCondition, matchPath } from './path-condition.ts';
import type { Alternative, Guard, Limit, Method, Rule } from './types.ts';

/**
 * Guards with a `match` of their own (one guard over every run-starting endpoint, whatever rule decides them). Unlike
 * the other guards, whether one applies depends on the request's method and path, not only on the deciding rule and
 * the identities present, so it cannot be folded into the compiled decisions. A decision that has such guards carries
 * them here; `resolve` adds those that fit the request, and hands back one frozen decision per combination (made once,
 * then reused: matching still allocates nothing, and each combination keeps its own cached policy header).
 */
export interface Decision {
  readonly rule: Rule;
  readonly limits: readonly Limit[];
  /** Guards of the decision with a match of their own; null when it has none. */
  readonly conditional: ConditionalGuards | null;
}

interface Candidate {
  readonly limit: Limit;
  readonly fits: (method: string, path: string) => boolean;
}

/** At most this many guards with a match per decision: each combination is one cached decision. */
export const MAX_CONDITIONAL_GUARDS = 8;

export class ConditionalGuards {
  private readonly candidates: readonly Candidate[];
  private readonly variants: (Decision | undefined)[] = [];

  constructor(
    private readonly base: { readonly rule: Rule; readonly limits: readonly Limit[] },
    guards: readonly Guard[],
  ) {
    this.candidates = guards.slice(0, MAX_CONDITIONAL_GUARDS).map((g) => ({
      limit: g.limit,
      fits: fitsAlternatives(g.alternatives!),
    }));
  }

  /** The decision for a request of `method` on the normalised `path`: the base limits plus the guards that fit. */
  resolve(method: string, path: string): Decision {
    const p = matchPath(path);
    let mask = 0;
    for (let i = 0; i < this.candidates.length; i++) if (this.candidates[i]!.fits(method, p)) mask |= 1 << i;
    let d = this.variants[mask];
    if (d === undefined) {
      const extra = this.candidates.filter((_, i) => (mask & (1 << i)) !== 0).map((c) => c.limit);
      d = Object.freeze({
        rule: this.base.rule,
        limits: extra.length > 0 ? Object.freeze([...this.base.limits, ...extra]) : this.base.limits,
        conditional: null,
      });
      this.variants[mask] = d;
    }
    return d;
  }
}

/** Whether a request of `method` on the match path fits any of `alternatives`. */
export function fitsAlternatives(alternatives: readonly Alternative[]): (method: string, path: string) => boolean {
  const tests = alternatives.map((a) => ({
    methods: a.methods,
    test: a.path ? compileCondition(a.path) : null,
  }));
  return (method, path) =>
    tests.some(
      ({ methods, test }) => (methods === null || methods.includes(method as Method)) && (test === null || test(path)),
    );
}
