/**
 * The match benchmark's correctness check: every request of the mix through
 * the compiled matcher and the reference; prints the first few disagreements.
 */
import { referenceMatch } from '../../support/reference-matcher.ts';
import type { Region } from './mix.ts';

/** How many requests of the mix the two matchers decide differently. */
export function differencesIn(regions: readonly Region[]): number {
  let differences = 0;
  for (const { name, rules, matcher, requests } of regions) {
    for (const req of requests) {
      const got = matcher.match(req);
      const want = referenceMatch(rules, req);
      const same =
        got === null
          ? want === null
          : want !== null &&
            got.rule.id === want.ruleId &&
            got.limits.map((l) => l.policy).join() === want.policies.join();
      if (!same && differences++ < 5) {
        console.error(
          `${name}: ${req.method} ${req.path} ${JSON.stringify(req.headers)}: compiled ${got ? got.rule.id : null}, reference ${want ? want.ruleId : null}`,
        );
      }
    }
  }
  return differences;
}
