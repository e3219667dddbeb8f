import type { IdentityKind } from './identity.ts';

/** The compiled-from-YAML shape of a rule file. Plain data: no functions, no I/O. */

/** Methods a rule may name. Any other request method only meets rules without a method. */
export const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT'] as const;
export type Method = (typeof METHODS)[number];

export const PATH_KINDS = ['path', 'prefix', 'contains', 'glob', 'template'] as const;
export type PathKind = (typeof PATH_KINDS)[number];

export interface PathCondition {
  readonly kind: PathKind;
  readonly value: string;
}

/** One way a rule's match can fit: a method set (null = any) and a path condition (null = any path). */
export interface Alternative {
  readonly methods: readonly Method[] | null;
  readonly path: PathCondition | null;
}

/** When an in-flight slot is given back: when the response ends, or when the run the response started ends. */
export type Until = 'response' | 'run';

export interface Limit {
  /** What the limit counts by: a kind of the identity table (identity.ts). */
  readonly by: IdentityKind;
  /** Tokens of a rate limit; slots of an in-flight one. */
  readonly count: number;
  /** A rate limit's period; 0 for an in-flight limit. */
  readonly perSeconds: number;
  /** In flight (`concurrent: N`): null for a rate limit, else when its slot is given back. */
  readonly until: Until | null;
  readonly category: string;
  /** `<rule id>.<by>`, or `guard.<guard id>` for a guard: the name of the bucket's policy in `RateLimit` headers. */
  readonly policy: string;
  /** The store key's name segment (`<prefix>:<region>:<scope>:<by>:<digest>`): the rule id, or `guard.<guard id>`. */
  readonly scope: string;
  /** The guard's id when this limit is a guard's (see Guard), else null. */
  readonly guard: string | null;
}

export interface SourceLocation {
  readonly file: string;
  readonly line: number;
}

export interface Rule {
  readonly id: string;
  /** The rule fits when any alternative fits. Never empty. */
  readonly alternatives: readonly Alternative[];
  readonly limits: readonly Limit[];
  readonly shadow: boolean;
  /** What a store failure means for this rule; null = the FAIL_MODE setting. */
  readonly fail: 'open' | 'closed' | null;
  readonly source: SourceLocation;
}

/**
 * A guard: a limit that applies to every request a rule decides (or, with `rules`, that one of those rules decides),
 * besides the deciding rule's own limits, when the request carries its identity. One bucket per identity, shared by
 * every rule the guard applies to: inventing identities the rules count by (a fresh `x-user-id` per request) cannot
 * multiply what one client IP gets.
 */
export interface Guard {
  readonly id: string;
  /** policy `guard.<id>`, scope `guard.<id>`, guard `<id>`. */
  readonly limit: Limit;
  /** The ids of the rules it applies to; null = every rule. */
  readonly rules: readonly string[] | null;
  /** Its own match (any alternative fits), checked besides the deciding rule; null = every request. */
  readonly alternatives: readonly Alternative[] | null;
  readonly source: SourceLocation;
}

export interface RuleSet {
  readonly file: string;
  readonly rules: readonly Rule[];
  readonly guards: readonly Guard[];
}
