import { applicableLimits } from './compile.ts';
import { presenceOf, type Headers } from './identity.ts';
import { compileCondition, matchPath } from './path-condition.ts';
import type { Alternative, Rule } from './types.ts';

/**
 * Why a request meets the rule it meets: the rules walked in order, each with
 * the reason it was passed over, up to the one that decides. Diagnostic only
 * (the `gateway explain` command); the edge uses the compiled matcher, and a
 * test checks that both always agree.
 */
export interface Step {
  readonly rule: Rule;
  readonly decides: boolean;
  readonly reason: string;
}

export function explainMatch(rules: readonly Rule[], method: string, normalizedPath: string, headers: Headers): Step[] {
  const path = matchPath(normalizedPath);
  const presence = presenceOf(headers);
  const steps: Step[] = [];
  for (const rule of rules) {
    const forMethod = rule.alternatives.filter((a) => a.methods === null || a.methods.includes(method as never));
    if (forMethod.length === 0) {
      steps.push({ rule, decides: false, reason: `method ${method} is not ${alternativesMethods(rule.alternatives)}` });
      continue;
    }
    const fits = forMethod.find((a) => a.path === null || compileCondition(a.path)(path));
    if (!fits) {
      steps.push({
        rule,
        decides: false,
        reason: `path ${path} fits none of: ${forMethod.map(describePath).join('; ')}`,
      });
      continue;
    }
    if (applicableLimits(rule, presence) === null) {
      const kinds = rule.limits.map((l) => l.by).join(', ');
      steps.push({
        rule,
        decides: false,
        reason: `fits (${describeAlternative(fits)}), but the request carries none of its identities (${kinds})`,
      });
      continue;
    }
    steps.push({
      rule,
      decides: true,
      reason: `fits (${describeAlternative(fits)}) and the request carries an identity it counts by`,
    });
    break;
  }
  return steps;
}

function alternativesMethods(alts: readonly Alternative[]): string {
  return [...new Set(alts.flatMap((a) => a.methods ?? []))].join(' or ');
}

function describePath(a: Alternative): string {
  return a.path ? `${a.path.kind} ${a.path.value}` : 'any path';
}

function describeAlternative(a: Alternative): string {
  return `${a.methods ? a.methods.join('|') : 'any method'}, ${describePath(a)}`;
}
