import { globMatcher, globSuffix, type PathTest } from './path-condition.ts';
import { fixedLayout, templateMatcher, type CharTest } from './template.ts';
import type { PathCondition } from './types.ts';

/**
 * The source of one condition's test in a matcher table's scan (scan-code.ts):
 * a boolean JavaScript expression of the path `p`, its length `n` and its last
 * character `z`. Prefixes, suffixes and fixed-length templates are unrolled
 * `charCodeAt` comparisons against constants; `contains`, and globs and
 * templates that cannot be unrolled, refer by index to `T` and `M` (see
 * `ConditionRefs`). Like the table around it, the source holds no text of a
 * rule file.
 */

/** What a condition's test refers to by index (`T[k]`, `M[k]`): never inlined as text. */
export interface ConditionRefs {
  /** Needles of `contains` conditions. */
  readonly texts: string[];
  readonly matchers: PathTest[];
  /**
   * Index in `matchers` of the matcher of each glob or template, by kind and text: one per condition, whichever cases
   * test it.
   */
  readonly matcherOf: Map<string, number>;
}

/** The code of the character after "/" that every path fitting `c` has, or null when `c` does not fix it. */
export function secondChar(c: PathCondition | null): number | null {
  if (c === null) return null;
  const head = c.kind === 'path' || c.kind === 'prefix' ? c.value : c.kind === 'contains' ? '' : literalHead(c.value);
  return head.length >= 2 ? head.charCodeAt(1) : null;
}

/** JavaScript source of a boolean test of `p` (length `n`) for one condition. */
export function testSource(c: PathCondition | null, secondKnown: boolean, refs: ConditionRefs): string {
  if (c === null || (c.kind === 'prefix' && c.value === '/')) return 'true';
  switch (c.kind) {
    case 'path':
      return `n === ${c.value.length} && ${charsFrom(c.value, secondKnown)}`;
    case 'prefix': {
      const L = c.value.length;
      return `n >= ${L} && ${charsFrom(c.value, secondKnown)} && (n === ${L} || p.charCodeAt(${L}) === 47)`;
    }
    case 'contains': {
      const t = refs.texts.indexOf(c.value);
      return `n >= ${c.value.length} && p.includes(T[${t !== -1 ? t : refs.texts.push(c.value) - 1}])`;
    }
    case 'glob': {
      const suffix = globSuffix(c.value);
      if (suffix !== null) return `n >= ${suffix.length} && ${endsWith(suffix)}`;
      return withHead(literalHead(c.value), secondKnown, matcherIndex(c, refs));
    }
    case 'template': {
      const layout = fixedLayout(c.value);
      if (layout !== null) return layoutTest(layout, secondKnown);
      return withHead(literalHead(c.value), secondKnown, matcherIndex(c, refs));
    }
  }
}

function matcherIndex(c: PathCondition, refs: ConditionRefs): number {
  const key = `${c.kind}:${c.value}`;
  let r = refs.matcherOf.get(key);
  if (r === undefined) {
    r = refs.matchers.push(c.kind === 'glob' ? globMatcher(c.value) : templateMatcher(c.value)) - 1;
    refs.matcherOf.set(key, r);
  }
  return r;
}

function withHead(head: string, secondKnown: boolean, r: number): string {
  return head.length > 0 ? `n >= ${head.length} && ${charsFrom(head, secondKnown)} && M[${r}](p)` : `M[${r}](p)`;
}

/**
 * A fixed-length template, unrolled: the length, then every fixed character
 * (literal text, separators, a UUID's dashes), then the hex digits, so that
 * most paths that do not fit are told apart before the costlier hex tests.
 */
function layoutTest(layout: readonly CharTest[], secondKnown: boolean): string {
  const fixed = charTests(
    layout.map((t) => (typeof t === 'number' ? t : null)),
    secondKnown,
  );
  const hex = layout.flatMap((t, i) => (t === 'hex' ? [hexTest(i)] : []));
  return [`n === ${layout.length}`, ...fixed, ...hex].join(' && ');
}

/**
 * Is the character at `i` a hex digit: `isHex` of template.ts, inlined (a call per character costs more than the test).
 */
function hexTest(i: number): string {
  return `(((c = p.charCodeAt(${i})) - 48) >>> 0 < 10 || ((c | 32) - 97) >>> 0 < 6)`;
}

/** `p` starts with `text`. */
function charsFrom(text: string, secondKnown: boolean): string {
  return charTests(codes(text), secondKnown).join(' && ') || 'true';
}

/**
 * Comparisons of `p`'s characters with `expected` (null: no test at that
 * index). Every path the matcher meets is normalised and so starts with "/":
 * the leading "/" is compared last, where it is read only by a path that
 * otherwise fits. The second character is skipped when the dispatch has
 * checked it.
 */
function charTests(expected: readonly (number | null)[], secondKnown: boolean): string[] {
  const order = [...expected.keys()].slice(1).concat(expected.length > 0 ? [0] : []);
  return order.flatMap((i) =>
    expected[i] === null || (i === 1 && secondKnown) ? [] : [`p.charCodeAt(${i}) === ${expected[i]}`],
  );
}

/** `p` ends with `text`; `z` is its last character, already read. */
function endsWith(text: string): string {
  const L = text.length;
  return codes(text)
    .map((c, i) => (i === L - 1 ? `z === ${c}` : `p.charCodeAt(n - ${L - i}) === ${c}`))
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
