import { compileEntry } from './entry-code.ts';
import { ConditionalGuards, type Decision } from './conditional-guards.ts';
import { applicableGuards, guardLimits } from './guards.ts';
import { identityPresent, PRESENCES, type IdentitySource, type Presence } from './identity.ts';
import { compileCondition } from './path-condition.ts';
import { compileTable, type Decide } from './scan-code.ts';
import { METHODS, type Guard, type Limit, type Method, type Rule } from './types.ts';

/**
 * The compiled matcher: pure, no I/O, built once per rule-file load.
 *
 * Evaluation: walk the rules in order; the first rule whose match fits and
 * that has at least one limit whose identity is present decides, and every
 * limit of it whose identity is present applies. (A rule that fits but counts
 * by no identity the request carries is passed over, so a later rule can
 * still limit the request: an API-key rule never stops an anonymous request
 * from meeting the IP rule after it.)
 *
 * Compilation splits that walk by the request's method: one table per method,
 * holding only the rules that admit it. Each table is one generated function
 * (scan-code.ts) of the path and of which identity headers the request
 * carries: every exact path the rules name meets a precomputed decision per
 * identity presence; any other path scans the remaining rules' non-exact
 * conditions in order, and a rule that fits decides when it has a limit for
 * an identity present. The entry, `match`, is generated too (entry-code.ts),
 * so that each of its calls of a table only ever sees that table. (Tables per
 * presence as well measured slower: four times the generated functions.)
 */

export interface MatchRequest extends IdentitySource {
  readonly method: string;
  /** The normalised request path (see `normalizePath`), without query. */
  readonly path: string;
}

/**
 * The outcome of matching: the deciding rule and its limits whose identity is
 * present on the request, in rule order, followed by the limits of the guards
 * that apply (guards.ts: `limit.guard` set). Precomputed at compile time and
 * shared (matching allocates nothing); the identity each limit counts by is
 * read from the request with `identityOf`.
 */
export type Match = Decision;

export interface Matcher {
  readonly rules: readonly Rule[];
  readonly guards: readonly Guard[];
  /** The deciding rule and its applicable limits, or null when no rule decides. */
  match(request: MatchRequest): Match | null;
}

/** The limits of `rule` whose identity `presence` carries; null when none. */
export function applicableLimits(rule: Rule, presence: Presence): readonly Limit[] | null {
  const limits = rule.limits.filter((l) => identityPresent(l.by, presence));
  return limits.length > 0 ? Object.freeze(limits) : null;
}

/** Does an alternative admit this method? `null` methods admit all; `OTHER` is any method not in METHODS. */
function admits(methods: readonly Method[] | null, method: Method | typeof OTHER): boolean {
  return methods === null || (method !== OTHER && methods.includes(method));
}

const OTHER = 'OTHER' as const;
const SLOTS = [...METHODS, OTHER] as const;
const ENTRY_ORDER: readonly Method[] = ['GET', 'POST', 'PATCH', 'PUT', 'DELETE', 'OPTIONS', 'HEAD', 'TRACE', 'CONNECT'];

export function compile(rules: readonly Rule[], guards: readonly Guard[] = []): Matcher {
  const tests = rules.map((r) => r.alternatives.map((a) => (a.path ? compileCondition(a.path) : null)));
  const exactPaths = new Set(
    rules.flatMap((r) => r.alternatives.flatMap((a) => (a.path?.kind === 'path' ? [a.path.value] : []))),
  );
  // Per rule, its decision for each identity presence (null: it counts by none of them), guards appended.
  const decisions = rules.map((rule) =>
    PRESENCES.map((presence) => {
      const limits = applicableLimits(rule, presence);
      if (!limits) return null;
      const guarded = guardLimits(guards, rule, presence);
      const base = { rule, limits: guarded.length > 0 ? Object.freeze([...limits, ...guarded]) : limits };
      const withMatch = applicableGuards(guards, rule, presence).filter((g) => g.alternatives !== null);
      return Object.freeze({
        ...base,
        conditional: withMatch.length > 0 ? new ConditionalGuards(base, withMatch) : null,
      });
    }),
  );

  // tables[slot]: the decision function of each method (of SLOTS), given the path and the presence
  const tables: Decide<Match>[] = SLOTS.map((method) => {
    const candidates = rules.flatMap((_, i) => {
      const alts = rules[i]!.alternatives.flatMap((a, j) =>
        admits(a.methods, method) ? [{ alt: a, test: tests[i]![j]! }] : [],
      );
      return alts.length > 0 && decisions[i]!.some((d) => d !== null) ? [{ byPresence: decisions[i]!, alts }] : [];
    });
    const exact = new Map<string, (Match | null)[]>();
    for (const p of exactPaths) {
      const fitting = candidates.filter((c) => c.alts.some(({ test }) => test === null || test(p)));
      exact.set(
        p,
        PRESENCES.map((q) => fitting.find((c) => c.byPresence[q] !== null)?.byPresence[q] ?? null),
      );
    }
    // An exact path never reaches the scan: its decision is known.
    const scan = candidates.flatMap(({ byPresence, alts }) =>
      alts.filter(({ alt }) => alt.path?.kind !== 'path').map(({ alt }) => ({ condition: alt.path, byPresence })),
    );
    return compileTable(`decide${method}`, exact, scan);
  });

  // Most frequent methods first: the entry tests them in this order.
  const byMethod = new Map(ENTRY_ORDER.map((m) => [m, tables[SLOTS.indexOf(m)]!]));
  const entry = compileEntry(byMethod, tables[SLOTS.indexOf(OTHER)]!);
  // Guards with a match of their own are resolved per request; a file without any keeps the bare generated entry.
  if (!guards.some((g) => g.alternatives !== null)) return { rules, guards, match: entry };
  return {
    rules,
    guards,
    match: (request) => {
      const m = entry(request);
      return m === null || m.conditional === null ? m : m.conditional.resolve(request.method, request.path);
    },
  };
}
