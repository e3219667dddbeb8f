import { inFlightScope, isProblem, limitShape } from './limit-kind.ts';
import { identityPresent, type Presence } from './identity.ts';
import type { RawGuard, RawMatch } from './schema.ts';
import type { Alternative, Guard, Limit, Rule, SourceLocation } from './types.ts';

/**
 * Guards (a rule file's `guards:`): limits that apply to every request a rule decides, besides that rule's own, so
 * that inventing identities (a fresh `x-user-id` or made-up `x-api-key` per request) cannot multiply one client's
 * allowance. A guard applies when a rule it covers (`rules:`, absent = every rule) decides and the request carries
 * the guard's identity. Its bucket is one per identity, shared by all those rules, and is taken from in the same
 * atomic call as the rule's: a denied request takes no token from any bucket, guards included.
 *
 * Guards are per file, not per request: the compiled matcher's decisions (compile.ts) hold each rule's limits with
 * its guards appended, computed once per rule and identity presence.
 */

/** No rule may be called this: a guard's policy is `guard.<id>`, which a rule "guard" counting by `<id>` would share. */
export const RESERVED_RULE_ID = 'guard';

export interface GuardReport {
  /** A problem of guard `i` at `path` under it. */
  at(i: number, path: readonly (string | number)[], reason: string): void;
  source(i: number): SourceLocation;
  /** Guard `i`'s own match as alternatives (its problems reported). */
  alternatives(i: number, match: RawMatch): Alternative[];
}

/** Builds the guards of a file whose rules have the ids `ruleIds`, reporting duplicates and unknown rule ids. */
export function buildGuards(raws: readonly RawGuard[], ruleIds: ReadonlySet<string>, report: GuardReport): Guard[] {
  const seen = new Map<string, number>();
  return raws.map((raw, i) => {
    const source = report.source(i);
    const first = seen.get(raw.id);
    if (first !== undefined) report.at(i, ['id'], `duplicate guard id (first defined on line ${first})`);
    else seen.set(raw.id, source.line);
    raw.rules?.forEach((id, j) => {
      if (!ruleIds.has(id)) report.at(i, ['rules', j], `rules[${j}] names no rule of this file: "${id}"`);
    });
    const name = `guard.${raw.id}`;
    const shape = limitShape(raw);
    if (isProblem(shape)) report.at(i, [shape.field], shape.reason);
    const { count, perSeconds, until } = isProblem(shape) ? { count: 1, perSeconds: 1, until: null } : shape;
    const limit: Limit = {
      by: raw.by,
      count,
      perSeconds,
      until,
      category: raw.category,
      policy: name,
      scope: until === null ? name : inFlightScope(name),
      guard: raw.id,
    };
    const alternatives = raw.match ? report.alternatives(i, raw.match) : null;
    return { id: raw.id, limit, rules: raw.rules ? [...new Set(raw.rules)] : null, alternatives, source };
  });
}

/** Does `guard` cover `rule` (apply when it decides)? */
export function covers(guard: Guard, rule: Rule): boolean {
  return guard.rules === null || guard.rules.includes(rule.id);
}

/**
 * The guards that apply when `rule` decides a request of identity presence `presence`, in file order: those without a
 * match of their own always do; a guard with one (`conditional`) when the request fits it too.
 */
export function guardLimits(guards: readonly Guard[], rule: Rule, presence: Presence): Limit[] {
  return applicableGuards(guards, rule, presence)
    .filter((g) => g.alternatives === null)
    .map((g) => g.limit);
}

export function applicableGuards(guards: readonly Guard[], rule: Rule, presence: Presence): Guard[] {
  return guards.filter((g) => covers(g, rule) && identityPresent(g.limit.by, presence));
}
