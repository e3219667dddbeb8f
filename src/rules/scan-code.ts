import { globMatcher, globSuffix, type PathTest } from './path-condition.ts';
import { templateMatcher } from './template.ts';
import type { PathCondition } from './types.ts';

/**
 * Generates the decision function of a matcher table: one JavaScript function
 * from the match path to the table's decision.
 *
 * 1. Exact paths: a hash on the path's length (a `switch`), then one unrolled
 *    comparison per exact path of that length; a length shared by more than
 *    EXACT_CHAIN paths gets a Map instead. V8 compares a request's path (a
 *    fresh, non-internalised string) with a Map's key through a slow runtime
 *    call, which is what this avoids.
 * 2. The scan: the table's other conditions in rule order, first fit wins.
 *    Prefixes and suffixes become unrolled `charCodeAt` comparisons against
 *    constants, which bail out at the first differing character;
 *    `startsWith`/`endsWith` calls cost several times more per test. Only
 *    `contains` (`includes`) and templates or non-suffix globs (their matcher,
 *    behind an unrolled test of their literal head) call out.
 *
 * Safety: the generated source holds only integers, indices and the
 * identifiers below; no text of a rule file is ever part of it.
 */
export interface ScanEntry<D> {
  /** null = any path */
  readonly condition: PathCondition | null;
  /** The rule's decision for each identity presence; null where it counts by none of them. */
  readonly byPresence: readonly (D | null)[];
}

/** The decision for a match path and an identity presence (see `Presence`). */
export type Decide<D> = (path: string, presence: number) => D | null;

const EXACT_CHAIN = 8;

export function compileTable<D>(exact: ReadonlyMap<string, readonly (D | null)[]>, entries: readonly ScanEntry<D>[]): Decide<D> {
  const decisions: (readonly (D | null)[])[] = [];
  const texts: string[] = [];
  const matchers: PathTest[] = [];
  const maps: Map<string, readonly (D | null)[]>[] = [];
  const tests = entries.map(({ condition, byPresence }) => ({
    line: testLine(condition, decisions.push(byPresence) - 1, byPresence.every((d) => d !== null), texts, matchers),
    // The character a matching path must have after its leading "/", when the condition fixes it.
    second: secondChar(condition),
  }));
  // Dispatch on that character: each case keeps, in rule order, the tests that
  // fix it to this character and the tests that fix nothing.
  const chars = [...new Set(tests.flatMap((t) => (t.second === null ? [] : [t.second])))];
  const body = (c: number | null) => upToUnconditional(tests.filter((t) => t.second === null || t.second === c).map((t) => t.line));
  const cases = chars.map((c) => `    case ${c}:\n      ${body(c).join('\n      ')}\n      return null;`);

  const byLength = new Map<number, string[]>();
  for (const path of exact.keys()) byLength.set(path.length, [...(byLength.get(path.length) ?? []), path]);
  const lengths = [...byLength].map(([n, paths]) => {
    if (paths.length > EXACT_CHAIN) {
      const m = maps.push(new Map(paths.map((path) => [path, exact.get(path)!]))) - 1;
      return `    case ${n}: { const d = X[${m}].get(p); if (d !== undefined) return d[q]; break; }`;
    }
    const lines = paths.map((path) => `if (${startsWith(path)}) return D[${decisions.push(exact.get(path)!) - 1}][q];`);
    return `    case ${n}:\n      ${lines.join('\n      ')}\n      break;`;
  });

  const source = `return function decide(p, q) {
  const n = p.length;
  switch (n) {
${lengths.join('\n')}
  }
  switch (n > 1 ? p.charCodeAt(1) : -1) {
${cases.join('\n')}
    default:
      ${body(null).join('\n      ')}
      return null;
  }
};`;
  return new Function('D', 'T', 'M', 'X', source)(decisions, texts, matchers, maps) as Decide<D>;
}

/** Lines after an unconditional `return` are dead: drop them. */
function upToUnconditional(lines: string[]): string[] {
  const i = lines.findIndex((l) => l.startsWith('return '));
  return i === -1 ? lines : lines.slice(0, i + 1);
}

/** A fitting rule decides when it counts by an identity of the request; `always`: it does for every presence. */
function testLine(c: PathCondition | null, d: number, always: boolean, texts: string[], matchers: PathTest[]): string {
  const test = testSource(c, texts, matchers);
  const decide = always ? `return D[${d}][q];` : `{ const d = D[${d}][q]; if (d !== null) return d; }`;
  return test === 'true' ? decide : `if (${test}) ${decide}`;
}

/** The code of the character after "/" that every path fitting `c` has, or null when `c` does not fix it. */
function secondChar(c: PathCondition | null): number | null {
  if (c === null) return null;
  const head = c.kind === 'path' || c.kind === 'prefix' ? c.value : c.kind === 'contains' ? '' : literalHead(c.value);
  return head.length >= 2 ? head.charCodeAt(1) : null;
}

/** JavaScript source of a boolean test of `p` (length `n`) for one condition. */
function testSource(c: PathCondition | null, texts: string[], matchers: PathTest[]): string {
  if (c === null || (c.kind === 'prefix' && c.value === '/')) return 'true';
  switch (c.kind) {
    case 'path':
      return `n === ${c.value.length} && ${startsWith(c.value)}`;
    case 'prefix': {
      const L = c.value.length;
      return `n >= ${L} && ${startsWith(c.value)} && (n === ${L} || p.charCodeAt(${L}) === 47)`;
    }
    case 'contains':
      return `p.includes(T[${texts.push(c.value) - 1}])`;
    case 'glob': {
      const suffix = globSuffix(c.value);
      if (suffix !== null) return `n >= ${suffix.length} && ${endsWith(suffix)}`;
      return withHead(literalHead(c.value), matchers.push(globMatcher(c.value)) - 1);
    }
    case 'template':
      return withHead(literalHead(c.value), matchers.push(templateMatcher(c.value)) - 1);
  }
}

function withHead(head: string, r: number): string {
  return head.length > 0 ? `n >= ${head.length} && ${startsWith(head)} && M[${r}](p)` : `M[${r}](p)`;
}

function startsWith(text: string): string {
  return codes(text).map((c, i) => `p.charCodeAt(${i}) === ${c}`).join(' && ') || 'true';
}

function endsWith(text: string): string {
  const L = text.length;
  return codes(text)
    .map((c, i) => `p.charCodeAt(n - ${L - i}) === ${c}`)
    .reverse() // the last characters tell most paths apart
    .join(' && ');
}

/** UTF-16 code units, as `charCodeAt` sees them. */
function codes(text: string): number[] {
  return Array.from({ length: text.length }, (_, i) => text.charCodeAt(i));
}

/** Text every match starts with: up to the first glob character or placeholder, less a final "/". */
function literalHead(pattern: string): string {
  const i = pattern.search(/[*?[\]{}()!+@|\\]/);
  if (i === -1) return pattern;
  // A trailing "/**" also matches nothing at all: "/static/**" fits "/static".
  const head = pattern.slice(0, i);
  return head.endsWith('/') ? head.slice(0, -1) : head;
}
