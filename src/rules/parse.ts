import { isMap, isScalar, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import type { z } from 'zod';
import { parseDuration } from './duration.ts';
import { conditionProblem } from './path-condition.ts';
import { PATH_FIELDS, ruleFileSchema, type RawAlternative, type RawMatch, type RawRule } from './schema.ts';
import type { Alternative, Limit, Method, PathCondition, Rule, RuleSet } from './types.ts';

export interface RuleProblem {
  readonly file: string;
  readonly line: number;
  readonly reason: string;
}

/** A rule file that cannot be used. `message` lists every problem as `file:line: reason`. */
export class RuleFileError extends Error {
  readonly code = 'invalid_rules';
  constructor(readonly problems: readonly RuleProblem[]) {
    super(problems.map((p) => `${p.file}:${p.line}: ${p.reason}`).join('\n'));
    this.name = 'RuleFileError';
  }
}

type YamlPath = readonly (string | number)[];

/** Parses and validates one rule file's text. Pure: `file` only names the source in errors. */
export function parseRuleFile(text: string, file: string): RuleSet {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const problems: RuleProblem[] = [];
  const report = (line: number, reason: string) => problems.push({ file, line, reason });

  if (doc.errors.length > 0) {
    // Only the first: one typo makes the YAML parser report a chain of follow-on errors.
    // (`linePos` is only filled in with `prettyErrors: true`; `pos` always is.)
    const e = doc.errors[0]!;
    report(lines.linePos(e.pos[0]).line, `YAML syntax error: ${firstLine(e.message)}`);
    throw new RuleFileError(problems);
  }
  const data: unknown = doc.toJS();
  if (data === null || data === undefined) {
    report(1, 'the file is empty: expected a list of rules');
    throw new RuleFileError(problems);
  }

  const lineOf = (path: YamlPath, key?: string) => locate(doc, lines, path, key);
  const parsed = ruleFileSchema.safeParse(data, { reportInput: true });
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const key = issue.code === 'unrecognized_keys' ? issue.keys[0] : undefined;
      report(lineOf(issue.path as YamlPath, key), withRule(data, issue.path, describeIssue(issue)));
    }
    throw new RuleFileError(problems);
  }

  const seen = new Map<string, number>();
  const rules = parsed.data.map((raw, i) => {
    const line = lineOf([i]);
    const at = (path: YamlPath, reason: string, key?: string) =>
      report(lineOf([i, ...path], key), `rule "${raw.id}": ${reason}`);
    const first = seen.get(raw.id);
    if (first !== undefined) at(['id'], `duplicate id (first defined on line ${first})`);
    else seen.set(raw.id, line);
    return buildRule(raw, { file, line }, at);
  });
  if (problems.length > 0) throw new RuleFileError(problems);
  return { file, rules };
}

type At = (path: YamlPath, reason: string, key?: string) => void;

function buildRule(raw: RawRule, source: Rule['source'], at: At): Rule {
  const byKinds = new Set<string>();
  const limits: Limit[] = raw.limits.map((l, j) => {
    if (byKinds.has(l.by))
      at(['limits', j, 'by'], `two limits count by "${l.by}"; a rule has at most one bucket per identity`);
    byKinds.add(l.by);
    return {
      by: l.by,
      count: l.count,
      perSeconds: parseDuration(l.per)!,
      category: l.category,
      policy: `${raw.id}.${l.by}`,
    };
  });
  return {
    id: raw.id,
    alternatives: buildAlternatives(raw.match, at),
    limits,
    shadow: raw.shadow ?? false,
    fail: raw.fail ?? null,
    source,
  };
}

function buildAlternatives(match: RawMatch | undefined, at: At): Alternative[] {
  if (!match) return [{ methods: null, path: null }];
  const top = asMethods(match.method);
  const topPath = pathCondition(match, ['match'], at, match.any !== undefined);
  if (!match.any) return [{ methods: top, path: topPath }];
  return match.any.map((alt, k) => {
    const where = ['match', 'any', k];
    const own = asMethods(alt.method);
    const methods = top && own ? top.filter((m) => own.includes(m)) : (top ?? own);
    if (methods && methods.length === 0) {
      at(
        [...where, 'method'],
        `alternative ${k + 1} can never match: its method is outside the rule's (${top!.join(', ')})`,
      );
    }
    return { methods, path: pathCondition(alt, where, at, false) };
  });
}

function asMethods(m: Method | Method[] | undefined): readonly Method[] | null {
  if (m === undefined) return null;
  return Array.isArray(m) ? [...new Set(m)] : [m];
}

function pathCondition(fields: RawAlternative, where: YamlPath, at: At, hasAny: boolean): PathCondition | null {
  const present = PATH_FIELDS.filter((k) => fields[k] !== undefined);
  if (present.length + (hasAny ? 1 : 0) > 1) {
    const names = hasAny ? [...present, 'any'] : present;
    at(
      where,
      `two path conditions in one match (${names.join(' and ')}); list alternatives under "any:" instead`,
      names[1],
    );
    return null;
  }
  const kind = present[0];
  if (kind === undefined) return null;
  const condition = { kind, value: fields[kind]! };
  const problem = conditionProblem(condition);
  if (problem) at([...where, kind], problem);
  return condition;
}

/** The line of the node at `path` (or of its key `key`), 1-based; the nearest existing ancestor otherwise. */
function locate(doc: Document, lines: LineCounter, path: YamlPath, key?: string): number {
  for (let n = path.length; n >= 0; n--) {
    const node = (n === 0 ? doc.contents : doc.getIn(path.slice(0, n), true)) as Node | null | undefined;
    if (!node?.range) continue;
    let offset = node.range[0];
    if (key !== undefined && n === path.length && isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && p.key.value === key);
      const keyNode = pair?.key as Node | undefined;
      if (keyNode?.range) offset = keyNode.range[0];
    }
    return lines.linePos(offset).line;
  }
  return 1;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const field = fieldName(issue.path);
  const got = (input: unknown) =>
    Array.isArray(input)
      ? input.length === 0
        ? 'an empty list'
        : 'a list'
      : input === null
        ? 'null'
        : typeof input === 'object'
          ? 'a mapping'
          : JSON.stringify(input);
  switch (issue.code) {
    case 'unrecognized_keys':
      return `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}${field ? ` in ${field}` : ''}`;
    case 'invalid_type':
      if (issue.input === undefined) return `missing "${field}"`;
      return `${field || 'the file'} must be ${article(issue.expected)}, got ${got(issue.input)}`;
    case 'invalid_value':
      return `${field} must be one of ${issue.values.join(', ')}, got ${got(issue.input)}`;
    case 'invalid_union':
      return `${field} must be a method or a list of methods (${'GET, POST, ...'}), got ${got(issue.input)}`;
    case 'too_small':
    case 'too_big': {
      if (issue.origin === 'array' && issue.path.length <= 1) return issue.message;
      const gotten = 'input' in issue ? `, got ${got(issue.input)}` : '';
      if (issue.origin === 'number') {
        const bound = issue.code === 'too_small' ? `at least ${issue.minimum}` : `at most ${issue.maximum}`;
        return `${field} must be ${bound}${gotten}`;
      }
      return `${field}: ${issue.message.replace(/^Too (small|big): expected (\w+) to have /, 'must be ')}${gotten}`;
    }
    default:
      return field ? `${field}: ${issue.message}` : issue.message;
  }
}

function article(expected: string): string {
  if (expected === 'array') return 'a list';
  if (expected === 'object') return 'a mapping';
  if (expected === 'int' || expected === 'integer') return 'a whole number';
  return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
}

/** `limits[0].per` from `[3, 'limits', 0, 'per']` (the leading rule index is left to `withRule`). */
function fieldName(path: readonly PropertyKey[]): string {
  let out = '';
  for (const [i, p] of path.entries()) {
    if (i === 0 && typeof p === 'number') continue;
    out += typeof p === 'number' ? `[${p}]` : out ? `.${String(p)}` : String(p);
  }
  return out;
}

function withRule(data: unknown, path: readonly PropertyKey[], reason: string): string {
  const i = path[0];
  if (typeof i !== 'number' || !Array.isArray(data)) return reason;
  const id = (data[i] as { id?: unknown } | null)?.id;
  return typeof id === 'string' ? `rule "${id}": ${reason}` : `rule #${i + 1}: ${reason}`;
}

function firstLine(message: string): string {
  return message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
}
