import { compileCondition, matchPath, type PathTest } from './path-condition.ts';
import { METHODS, type IdentityKind, type Limit, type Method, type Rule } from './types.ts';

/**
 * The compiled matcher: pure, no I/O, built once per rule-file load.
 *
 * Evaluation (DESIGN.md "Rule files"): walk the rules in order; the first rule
 * whose match fits and that has at least one limit whose identity is present
 * decides, and every limit of it whose identity is present applies.
 *
 * Compilation splits that walk by what a request brings before any path test:
 * its method (one table per method, holding only rules that admit it) and which
 * identity headers it carries (one table per combination, holding only rules
 * with a limit for it). In each table, every exact path the rules name is a
 * hash lookup to its precomputed decision; any other path scans the remaining
 * rules' non-exact conditions in order.
 */

export type Headers = Readonly<Record<string, string | readonly string[] | undefined>>;

export interface MatchRequest {
  readonly method: string;
  /** The normalised request path (see `normalizePath`), without query. */
  readonly path: string;
  /** Lower-case header names, as Node gives them. */
  readonly headers: Headers;
  /** The client address the `ip` and `user-ip` identities count by. */
  readonly ip: string;
}

export interface Match {
  readonly rule: Rule;
  /** The deciding rule's limits whose identity is present on the request, in rule order. */
  readonly limits: readonly Limit[];
  readonly apiKey: string | undefined;
  readonly userId: string | undefined;
  readonly ip: string;
}

export interface Matcher {
  readonly rules: readonly Rule[];
  /** The deciding rule and its applicable limits, or null when no rule decides. */
  match(request: MatchRequest): Match | null;
}

/** The value a limit counts by on a matched request. `user-ip` joins user id and IP with a NUL, which headers cannot hold. */
export function identityOf(match: Match, by: IdentityKind): string {
  switch (by) {
    case 'api-key':
      return match.apiKey!;
    case 'user-ip':
      return `${match.userId!}\u0000${match.ip}`;
    case 'ip':
      return match.ip;
  }
}

/** A header's value when present and non-empty; repeated headers are joined as Node joins them. */
export function headerValue(headers: Headers, name: string): string | undefined {
  const v = headers[name];
  if (typeof v === 'string') return v.length > 0 ? v : undefined;
  if (v === undefined || v.length === 0) return undefined;
  const joined = v.join(', ');
  return joined.length > 0 ? joined : undefined;
}

/** Which identities a request carries: bit 0 `x-api-key`, bit 1 `x-user-id` (the IP is always there). */
export type Presence = 0 | 1 | 2 | 3;
export const PRESENCES: readonly Presence[] = [0, 1, 2, 3];

export function presenceOf(apiKey: string | undefined, userId: string | undefined): Presence {
  return ((apiKey !== undefined ? 1 : 0) | (userId !== undefined ? 2 : 0)) as Presence;
}

export function identityPresent(by: IdentityKind, presence: Presence): boolean {
  return by === 'ip' || (by === 'api-key' ? (presence & 1) !== 0 : (presence & 2) !== 0);
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
const SLOT_OF: Readonly<Record<string, number>> = Object.freeze(
  Object.assign(Object.create(null) as Record<string, number>, Object.fromEntries(METHODS.map((m, i) => [m, i]))),
);

interface Decision {
  readonly rule: Rule;
  readonly limits: readonly Limit[];
}
interface ScanEntry extends Decision {
  /** null = any path */
  readonly test: PathTest | null;
}
interface Table {
  /** exact path → its decision (null: no rule decides) */
  readonly exact: ReadonlyMap<string, Decision | null>;
  readonly scan: readonly ScanEntry[];
}

export function compile(rules: readonly Rule[]): Matcher {
  const tests = rules.map((r) => r.alternatives.map((a) => (a.path ? compileCondition(a.path) : null)));
  const exactPaths = new Set(rules.flatMap((r) => r.alternatives.flatMap((a) => (a.path?.kind === 'path' ? [a.path.value] : []))));

  // tables[slot * 4 + presence]
  const tables: Table[] = [];
  for (const method of SLOTS) {
    for (const presence of PRESENCES) {
      const candidates = rules.flatMap((rule, i) => {
        const limits = applicableLimits(rule, presence);
        const alts = rule.alternatives.flatMap((a, j) => (admits(a.methods, method) ? [{ alt: a, test: tests[i]![j]! }] : []));
        return limits && alts.length > 0 ? [{ rule, limits, alts }] : [];
      });
      const exact = new Map<string, Decision | null>();
      for (const p of exactPaths) {
        const hit = candidates.find((c) => c.alts.some(({ test }) => test === null || test(p)));
        exact.set(p, hit ? { rule: hit.rule, limits: hit.limits } : null);
      }
      const scan = candidates.flatMap(({ rule, limits, alts }): ScanEntry[] => {
        if (alts.some(({ test }) => test === null)) return [{ rule, limits, test: null }];
        const inexact = alts.filter(({ alt }) => alt.path!.kind !== 'path').map(({ test }) => test!);
        return inexact.length === 0 ? [] : [{ rule, limits, test: anyOf(inexact) }];
      });
      tables.push({ exact, scan });
    }
  }

  return {
    rules,
    match(request: MatchRequest): Match | null {
      const apiKey = headerValue(request.headers, 'x-api-key');
      const userId = headerValue(request.headers, 'x-user-id');
      const slot = SLOT_OF[request.method] ?? METHODS.length;
      const table = tables[slot * 4 + presenceOf(apiKey, userId)]!;
      const path = matchPath(request.path);
      let decision: Decision | null | undefined = table.exact.get(path);
      if (decision === undefined) {
        decision = null;
        const scan = table.scan;
        for (let i = 0; i < scan.length; i++) {
          const e = scan[i]!;
          if (e.test === null || e.test(path)) {
            decision = e;
            break;
          }
        }
      }
      return decision === null ? null : { rule: decision.rule, limits: decision.limits, apiKey, userId, ip: request.ip };
    },
  };
}

function anyOf(tests: readonly PathTest[]): PathTest {
  if (tests.length === 1) return tests[0]!;
  return (p) => {
    for (let i = 0; i < tests.length; i++) if (tests[i]!(p)) return true;
    return false;
  };
}
