import { isMap, isScalar, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import type { z } from 'zod';
import { describeIssue, withItem } from './describe-issue.ts';
import { buildGuards, RESERVED_RULE_ID } from './guards.ts';
import { inFlightScope, isProblem, limitShape } from './limit-kind.ts';
import { conditionProblem } from './path-condition.ts';
import {
  FILE_KEYS,
  guardListSchema,
  guardSchema,
  PATH_FIELDS,
  ruleListSchema,
  ruleSchema,
  type RawAlternative,
  type RawMatch,
  type RawRule,
} from './schema.ts';
import { describeYamlError } from './yaml-syntax.ts';
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
    // The line of a `{`, `[` or quote left open too, not only where the parser noticed (yaml-syntax.ts).
    const { line, reason } = describeYamlError(text, doc.errors[0]!, lines);
    report(line, reason);
    throw new RuleFileError(problems);
  }
  const data: unknown = doc.toJS();
  if (data === null || data === undefined) {
    report(1, 'the file is empty: expected a list of rules (or a mapping of "guards" and "rules")');
    throw new RuleFileError(problems);
  }

  const lineOf = (path: YamlPath, key?: string) => locate(doc, lines, path, key);
  const shape = fileShape(data, lineOf, report);
  if (shape === null) throw new RuleFileError(problems);
  // Schema issues, by line: each part validated on its own, its issues' paths relative to it.
  const check = (schema: z.ZodType, value: unknown, base: YamlPath, noun: string): void => {
    const parsed = schema.safeParse(value, { reportInput: true });
    if (parsed.success) return;
    const whole = base.length === 0 ? 'the file' : `"${base[0]}"`;
    for (const issue of parsed.error.issues) {
      const key = issue.code === 'unrecognized_keys' ? issue.keys[0] : undefined;
      const reason = withItem(value, issue.path, describeIssue(issue, whole), noun);
      report(lineOf([...base, ...(issue.path as YamlPath)], key), reason);
    }
  };
  // Every problem of the file in one report: the items the schema accepts are still checked for what it cannot say.
  check(ruleListSchema, shape.rules, shape.base, 'rule');
  if (shape.guards !== undefined) check(guardListSchema, shape.guards, ['guards'], 'guard');
  const rawRules = accepted(ruleSchema, shape.rules);
  const rawGuards = accepted(guardSchema, shape.guards);

  const seen = new Map<string, number>();
  const rules = rawRules.map(({ raw, i }) => {
    const line = lineOf([...shape.base, i]);
    const at = (path: YamlPath, reason: string, key?: string) =>
      report(lineOf([...shape.base, i, ...path], key), `rule "${raw.id}": ${reason}`);
    const first = seen.get(raw.id);
    if (first !== undefined) at(['id'], `duplicate id (first defined on line ${first})`);
    else seen.set(raw.id, line);
    if (raw.id === RESERVED_RULE_ID)
      at(['id'], `the id "${RESERVED_RULE_ID}" is reserved (guards' policies are named "guard.<id>")`);
    return buildRule(raw, { file, line }, at);
  });
  // A guard may name a rule the schema refused: that rule's own problem is reported, not the guard's.
  const guardAt = (k: number) => (path: YamlPath, reason: string, key?: string) =>
    report(lineOf(['guards', rawGuards[k]!.i, ...path], key), `guard "${rawGuards[k]!.raw.id}": ${reason}`);
  const guards = buildGuards(
    rawGuards.map((g) => g.raw),
    new Set(itemIds(shape.rules)),
    {
      at: (k, path, reason) => guardAt(k)(path, reason),
      source: (k) => ({ file, line: lineOf(['guards', rawGuards[k]!.i]) }),
      alternatives: (k, match) => buildAlternatives(match, guardAt(k)),
    },
  );
  if (problems.length > 0) throw new RuleFileError(problems.sort((a, b) => a.line - b.line));
  return { file, rules, guards };
}

/** The items of `list` that `schema` accepts on their own, with their index in it (none when it is not a list). */
function accepted<T>(schema: z.ZodType<T>, list: unknown): { raw: T; i: number }[] {
  if (!Array.isArray(list)) return [];
  return list.flatMap((item, i) => {
    const parsed = schema.safeParse(item);
    return parsed.success ? [{ raw: parsed.data, i }] : [];
  });
}

/** The string ids of a list's items, whatever else is wrong with them. */
function itemIds(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return list.flatMap((item) => {
    const id = (item as { id?: unknown } | null)?.id;
    return typeof id === 'string' ? [id] : [];
  });
}

/**
 * Where the rules and guards are: a bare list is the rules (no guards); a mapping holds `rules:` and optionally
 * `guards:`. Null (problems reported) for a mapping that is neither.
 */
function fileShape(
  data: unknown,
  lineOf: (path: YamlPath, key?: string) => number,
  report: (line: number, reason: string) => void,
): { rules: unknown; guards: unknown; base: YamlPath } | null {
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    return { rules: data, guards: undefined, base: [] };
  const fields = data as Record<string, unknown>;
  const keys = Object.keys(fields);
  if (!keys.some((k) => (FILE_KEYS as readonly string[]).includes(k))) {
    report(
      lineOf([]),
      'the file must be a list of rules, or a mapping of "rules" (and "guards"), got a mapping without either',
    );
    return null;
  }
  const unknown = keys.filter((k) => !(FILE_KEYS as readonly string[]).includes(k));
  for (const k of unknown)
    report(lineOf([], k), `unknown key "${k}" at the top of the file (known: ${FILE_KEYS.join(', ')})`);
  if (fields.rules === undefined) report(lineOf([]), 'missing "rules": a file with guards still needs its rules');
  return unknown.length > 0 || fields.rules === undefined
    ? null
    : { rules: fields.rules, guards: fields.guards, base: ['rules'] };
}

type At = (path: YamlPath, reason: string, key?: string) => void;

function buildRule(raw: RawRule, source: Rule['source'], at: At): Rule {
  const byKinds = new Set<string>();
  const limits: Limit[] = raw.limits.map((l, j) => {
    if (byKinds.has(l.by))
      at(['limits', j, 'by'], `two limits count by "${l.by}"; a rule has at most one bucket per identity`);
    byKinds.add(l.by);
    const shape = limitShape(l);
    if (isProblem(shape)) at(['limits', j, shape.field], `limits[${j}]: ${shape.reason}`);
    const { count, perSeconds, until } = isProblem(shape) ? { count: 1, perSeconds: 1, until: null } : shape;
    return {
      by: l.by,
      count,
      perSeconds,
      until,
      category: l.category,
      policy: `${raw.id}.${l.by}`,
      scope: until === null ? raw.id : inFlightScope(raw.id),
      guard: null,
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
