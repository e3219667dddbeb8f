import { applicableLimits } from './compile.ts';
import { matchCovers } from './coverage.ts';
import { IDENTITY_HEADERS, PRESENCES, presentHeaders, type Presence } from './identity.ts';
import { lintGuards, type GuardFinding } from './lint-guards.ts';
import type { Rule, RuleSet } from './types.ts';

/**
 * Findings about a valid rule file: rules whose limits cannot apply (or cannot
 * apply to some callers) because an earlier rule decides first.
 *
 * - `shadowed`: for every identity the rule counts by, an earlier rule fits
 *   all its requests and has a limit for that identity, so it never decides
 *   (the table's default rows placed before `runs-stats`).
 * - `partly-shadowed`: an earlier, strictly broader rule decides first for the
 *   requests carrying some identities (an API-key default before
 *   `public-download`: keyed downloads never meet the download limit). An
 *   earlier rule with the very same match is not reported: that is the usual
 *   way to give different identities different limits (`default`, then `public`).
 * - `guard-tighter` (lint-guards.ts): a guard keeps a rule's limit from being reached.
 */
export interface Finding {
  readonly file: string;
  readonly line: number;
  readonly rule: string;
  readonly kind: 'shadowed' | 'partly-shadowed';
  readonly reason: string;
}

/**
 * The callers of each presence, by the identity headers they send ("requests with x-api-key only"); index: presence.
 */
export const CALLERS: readonly string[] = PRESENCES.map(callers);

function callers(presence: Presence): string {
  const present = presentHeaders(presence);
  if (present.length === 0) return `requests without ${IDENTITY_HEADERS.join(' or ')}`;
  if (present.length < IDENTITY_HEADERS.length) return `requests with ${present.join(' and ')} only`;
  return `requests with ${present.length === 2 ? 'both ' : ''}${present.join(' and ')}`;
}

export function lint(set: RuleSet): (Finding | GuardFinding)[] {
  const findings: (Finding | GuardFinding)[] = [];
  set.rules.forEach((rule, j) => {
    const earlier = set.rules.slice(0, j).filter((a) => matchCovers(a, rule));
    const decides = PRESENCES.filter((p) => applicableLimits(rule, p) !== null);
    const preempted = new Map<Presence, Rule>();
    for (const p of decides) {
      const first = earlier.find((a) => applicableLimits(a, p) !== null);
      if (first) preempted.set(p, first);
    }
    const at = { file: set.file, line: rule.source.line, rule: rule.id };
    if (preempted.size === decides.length) {
      findings.push({ ...at, kind: 'shadowed', reason: `never decides: ${blame(preempted)}` });
      return;
    }
    const broader = new Map([...preempted].filter(([, a]) => !matchCovers(rule, a)));
    if (broader.size > 0) {
      findings.push({ ...at, kind: 'partly-shadowed', reason: `never applies to some callers: ${blame(broader)}` });
    }
  });
  // Guards that keep a rule's limit from being reached (lint-guards.ts).
  return [...findings, ...lintGuards(set)];
}

/** "earlier rule "default" (line 12) decides first for requests with x-api-key only, ..." */
function blame(by: ReadonlyMap<Presence, Rule>): string {
  const perRule = new Map<Rule, Presence[]>();
  for (const [p, r] of by) perRule.set(r, [...(perRule.get(r) ?? []), p]);
  return [...perRule]
    .map(
      ([r, ps]) =>
        `earlier rule "${r.id}" (line ${r.source.line}) fits all its requests and decides first for ${ps.map((p) => CALLERS[p]!).join(', ')}`,
    )
    .join('; ');
}
