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

export interface Limit {
  /** What the limit counts by: a kind of the identity table (identity.ts). */
  readonly by: IdentityKind;
  readonly count: number;
  readonly perSeconds: number;
  readonly category: string;
  /** `<rule id>.<by>`: the name of the bucket's policy in `RateLimit` headers. */
  readonly policy: string;
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

export interface RuleSet {
  readonly file: string;
  readonly rules: readonly Rule[];
}
