// Shared by the rule tests (test/rules: differential, generated code) and the matcher bench (bench/match).
import picomatch from 'picomatch';
import type { IdentityKind } from '../src/rules/identity.ts';
import type { PathCondition, Rule } from '../src/rules/types.ts';

/**
 * The naive reference matcher: the evaluation rule read literally (rules in
 * order; the first rule whose match fits and that has a limit for an identity
 * the request carries decides, with every such limit). It shares
 * no code with src/rules/compile.ts or path-condition.ts (it imports neither),
 * so that a differential test against the compiled matcher means something.
 * Every rule, alternative and condition is tested on every call; only picomatch
 * matchers and template regexes are cached, by their source text. Which
 * identities a request carries is written out here too rather than read from
 * the identity table (identity.ts): a new kind must be added here by hand,
 * and `present` stops compiling until it is.
 */

export interface ReferenceRequest {
  readonly method: string;
  /** The normalised request path. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  readonly ip: string;
}

export interface ReferenceResult {
  readonly ruleId: string;
  /** `policy` of every applicable limit, in rule order. */
  readonly policies: string[];
}

export function referenceMatch(rules: readonly Rule[], req: ReferenceRequest): ReferenceResult | null {
  const path = req.path.length > 1 && req.path.endsWith('/') ? req.path.slice(0, -1) : req.path;
  const present: Record<IdentityKind, boolean> = {
    'api-key': nonEmpty(req.headers['x-api-key']),
    'user-ip': nonEmpty(req.headers['x-user-id']),
    ip: true,
  };
  for (const rule of rules) {
    const fits = rule.alternatives.some(
      (alt) =>
        (alt.methods === null || (alt.methods as readonly string[]).includes(req.method)) &&
        (alt.path === null || pathFits(alt.path, path)),
    );
    if (!fits) continue;
    const policies = rule.limits.filter((l) => present[l.by]).map((l) => l.policy);
    if (policies.length > 0) return { ruleId: rule.id, policies };
  }
  return null;
}

/** A header is present when non-empty; a repeated header (an array) when any of its values is. */
function nonEmpty(v: string | readonly string[] | undefined): boolean {
  return typeof v === 'string' ? v.length > 0 : v !== undefined && v.some((x) => x.length > 0);
}

function pathFits(c: PathCondition, path: string): boolean {
  switch (c.kind) {
    case 'path':
      return path === c.value;
    case 'prefix':
      return c.value === '/' || path === c.value || path.startsWith(c.value + '/');
    case 'contains':
      return path.includes(c.value);
    case 'glob':
      return globMatcher(c.value)(path);
    case 'template':
      return templateRegex(c.value).test(path);
  }
}

const globs = new Map<string, (path: string) => boolean>();
function globMatcher(glob: string): (path: string) => boolean {
  let m = globs.get(glob);
  if (!m) globs.set(glob, (m = picomatch(glob, { dot: true })));
  return m;
}

const HEX = '[0-9a-fA-F]';
const PLACEHOLDER = new Map([
  ['{uuid}', `${HEX}{8}-${HEX}{4}-${HEX}{4}-${HEX}{4}-${HEX}{12}`],
  ['{id}', '[^/]+'],
  ['{int}', '[0-9]+'],
]);
const templates = new Map<string, RegExp>();
function templateRegex(template: string): RegExp {
  let re = templates.get(template);
  if (!re) {
    const segments = template.split('/').map((s) => PLACEHOLDER.get(s) ?? s.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&'));
    templates.set(template, (re = new RegExp(`^${segments.join('/')}$`)));
  }
  return re;
}
