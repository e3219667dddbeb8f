import { canBeKey } from '../keys/key-format.ts';
import type { KeyRegistry } from '../keys/types.ts';
import { memoKey } from '../memo/memo-key.ts';
import { RecentlyUsed } from '../memo/recently-used.ts';
import { overridden, type LiveOverrides, type OrgOverrides } from '../limiter/overrides.ts';
import type { Match, MatchRequest } from '../rules/compile.ts';
import { IDENTITIES } from '../rules/identity.ts';

/** The decision for a request with its organisation's overrides applied (a promise only on a registry lookup). */
export type OrgPlans = (match: Match, request: MatchRequest) => Match | Promise<Match>;

const API_KEY_HEADER = IDENTITIES['api-key'].header;
/** How long a key the registry does not know stays without an organisation before it is asked again. */
const UNKNOWN_FOR_MS = 10_000;
/** How long a key's organisation is remembered (a revoked key loses its plan within it). */
const KNOWN_FOR_MS = 60_000;

/**
 * Plans per organisation at the limit step: the request's API key resolved to its organisation through the key
 * registry (remembered, as KEY_CHECK's answers are), and the decision's limits with that organisation's override
 * numbers. Nothing is looked up while no override exists. The bucket keys stay the same: the store's script takes each
 * bucket's capacity with every call, so a changed capacity simply applies to the bucket's current state.
 */
export function orgPlans(live: LiveOverrides, registry: Pick<KeyRegistry, 'findKey'>, now = Date.now): OrgPlans {
  const orgs = new RecentlyUsed<string, { org: string | null; until: number }>(50_000);
  // Per generation of the overrides, per organisation: each shared decision's overridden copy (so the limit step's
  // per-decision caches, the policy header among them, see the overridden numbers).
  let generation = -1;
  let copies = new Map<string, WeakMap<Match, Match>>();

  const orgOf = (key: string): string | null | Promise<string | null> => {
    const memo = memoKey(key);
    const known = orgs.get(memo);
    if (known !== undefined && known.until > now()) return known.org;
    return registry.findKey(key).then(
      (r) => {
        orgs.set(memo, { org: r?.org ?? null, until: now() + (r === null ? UNKNOWN_FOR_MS : KNOWN_FOR_MS) });
        return r?.org ?? null;
      },
      () => null, // the registry cannot answer: the rules' own numbers apply
    );
  };

  const apply = (match: Match, org: string | null): Match => {
    if (org === null) return match;
    const plan = live.of(org);
    if (plan === undefined) return match;
    if (generation !== live.generation) {
      generation = live.generation;
      copies = new Map();
    }
    let mine = copies.get(org);
    if (mine === undefined) copies.set(org, (mine = new WeakMap()));
    let copy = mine.get(match);
    if (copy === undefined) mine.set(match, (copy = withPlan(match, plan)));
    return copy;
  };

  return (match, request) => {
    if (live.empty) return match;
    const key = request.headers[API_KEY_HEADER];
    if (typeof key !== 'string' || !canBeKey(key)) return match;
    const org = orgOf(key);
    return org instanceof Promise ? org.then((o) => apply(match, o)) : apply(match, org);
  };
}

/** `match` with the plan's numbers for the limits it overrides (the same object when it overrides none of them). */
export function withPlan(match: Match, plan: OrgOverrides): Match {
  let changed = false;
  const limits = match.limits.map((l) => {
    const o = plan[l.policy];
    const n = o === undefined ? l : overridden(l, o);
    if (n !== l) changed = true;
    return n;
  });
  return changed ? Object.freeze({ ...match, limits: Object.freeze(limits) }) : match;
}
