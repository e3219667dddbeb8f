import { covers } from './guards.ts';
import { IDENTITIES, type IdentityKind } from './identity.ts';
import type { Guard, Limit, RuleSet } from './types.ts';

/**
 * `guard-tighter`: a guard that one client meets before it can use a rule's limit in full, so that limit is never
 * reached as written (a per-IP guard of 50 a minute above a rule's per-IP 100 a minute). A guard bounds a rule's
 * limit when one identity of the limit is always one identity of the guard: the same kind, or a guard by the client
 * IP alone and a limit whose identity includes the IP (`user-ip`). It is tighter when it holds fewer tokens or
 * refills more slowly.
 */
export interface GuardFinding {
  readonly file: string;
  readonly line: number;
  readonly rule: string;
  readonly kind: 'guard-tighter';
  readonly reason: string;
}

export function lintGuards(set: RuleSet): GuardFinding[] {
  const findings: GuardFinding[] = [];
  for (const rule of set.rules) {
    for (const limit of rule.limits) {
      const tighter = set.guards.filter((g) => covers(g, rule) && bounds(g.limit.by, limit.by) && isTighter(g, limit));
      for (const g of tighter) {
        findings.push({
          file: set.file,
          line: rule.source.line,
          rule: rule.id,
          kind: 'guard-tighter',
          reason:
            `its ${limit.by} limit (${rate(limit)}) is never reached in full: guard "${g.id}" (line ${g.source.line}) ` +
            `allows ${rate(g.limit)} per ${g.limit.by}`,
        });
      }
    }
  }
  return findings;
}

/** Does the identity of `guard` hold every request of one identity of `limit`? */
function bounds(guard: IdentityKind, limit: IdentityKind): boolean {
  return guard === limit || (IDENTITIES[guard].header === null && dependsOnIp(guard) && dependsOnIp(limit));
}

/** Whether a kind's identity changes with the client IP (read from the identity table's `form`). */
function dependsOnIp(kind: IdentityKind): boolean {
  const form = IDENTITIES[kind].form;
  return form('v', '192.0.2.1') !== form('v', '192.0.2.2');
}

/** A rate and an in-flight limit bound different things: only limits of one kind are compared. */
function isTighter(g: Guard, l: Limit): boolean {
  if ((g.limit.until === null) !== (l.until === null)) return false;
  if (l.until !== null) return g.limit.count < l.count;
  return g.limit.count < l.count || g.limit.count / g.limit.perSeconds < l.count / l.perSeconds;
}

function rate(l: Limit): string {
  return l.until === null ? `${l.count} per ${l.perSeconds}s` : `${l.count} in flight`;
}
