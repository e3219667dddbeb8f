import { globMatcher, globSuffix, type PathTest } from './path-condition.ts';
import { fixedLayout, templateMatcher, type CharTest } from './template.ts';
import type { PathCondition } from './types.ts';

/**
 * Generates the decision function of a matcher table: one JavaScript function
 * from the match path, the identity presence and the path's last character to
 * the table's decision.
 *
 * 1. Dispatch on the path's second character, the one after the leading "/"
 *    (a `switch`). Each case holds only what a path with that character can
 *    meet, and its tests skip that character. (The leading "/" itself is not
 *    read up front: a test compares it last, see `charTests`.)
 * 2. Exact paths: within the case, a `switch` on the path's length, then per
 *    exact path of that length a test of its last character (read once by
 *    the entry) and a string comparison (`===`: one builtin call comparing
 *    whole words, a third of the cost of comparing character by character);
 *    more than EXACT_CHAIN paths of one length get a Map instead. V8 hashes a
 *    request's path (a fresh, non-internalised string) for a Map lookup
 *    through a slow runtime call, which the chain avoids. An exact path's
 *    decision is complete (computed at compile time against every rule), so
 *    it returns at once.
 * 3. The scan: the case's other conditions in rule order, first fit wins. A
 *    rule that counts by no identity of the request cannot decide, so a bit
 *    test of the presence skips it before any character is read. Prefixes,
 *    suffixes and fixed-length templates (literal segments and {uuid}, see
 *    `fixedLayout`) become unrolled `charCodeAt` comparisons against
 *    constants, which bail out at the first differing character;
 *    `startsWith`/`endsWith` calls cost several times more per test. Only
 *    `contains` (`includes`) and templates with {id} or {int} or non-suffix
 *    globs (their matcher, behind an unrolled test of their literal head)
 *    call out.
 *
 * (One table per method and presence instead of the bit tests measured 4%
 * fewer instructions but 20% slower: four times the functions and one more
 * unpredictable branch.)
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

/**
 * The decision for a match path, an identity presence (see `Presence`) and the
 * path's last character code (-1 for an empty path): the entry has read it to
 * drop a trailing slash, and suffix tests start with it.
 */
export type Decide<D> = (path: string, presence: number, last: number) => D | null;

const EXACT_CHAIN = 8;
/** Dispatch value of a path shorter than two characters. */
const NO_SECOND_CHAR = -1;

/** What the generated source refers to by index (`D[k]`, `T[k]`, ...): never inlined as text. */
interface Refs<D> {
  /** A rule's (or an exact path's) decision for each presence. */
  readonly decisions: (readonly (D | null)[])[];
  /** Needles of `contains` conditions. */
  readonly texts: string[];
  /** Exact paths. */
  readonly paths: string[];
  readonly matchers: PathTest[];
  /**
   * Index in `matchers` of the matcher of each glob or template, by kind and text: one per condition, whichever cases
   * test it.
   */
  readonly matcherOf: Map<string, number>;
  readonly maps: Map<string, readonly (D | null)[]>[];
}

/**
 * `name` names the generated function (stack traces, profiles); it must be a
 * plain identifier chosen by the caller, never text from a rule file.
 */
export function compileTable<D>(
  name: string,
  exact: ReadonlyMap<string, readonly (D | null)[]>,
  entries: readonly ScanEntry<D>[],
): Decide<D> {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`not an identifier: ${name}`);
  const refs: Refs<D> = { decisions: [], texts: [], paths: [], matchers: [], matcherOf: new Map(), maps: [] };
  const scan = entries.map(({ condition, byPresence }) => ({
    condition,
    decision: refs.decisions.push(byPresence) - 1,
    // Bit q set: the rule counts by an identity that presence q carries.
    mask: byPresence.reduce((m, d, q) => (d === null ? m : m | (1 << q)), 0),
    all: (1 << byPresence.length) - 1,
    second: secondChar(condition),
  }));
  const exactBySecond = new Map<number, string[]>();
  for (const path of exact.keys()) {
    const c = path.length >= 2 ? path.charCodeAt(1) : NO_SECOND_CHAR;
    exactBySecond.set(c, [...(exactBySecond.get(c) ?? []), path]);
  }

  // The scan of paths whose second character is `c` (null: a character no condition fixes).
  const scanLines = (c: number | null) =>
    upToUnconditional(
      scan.filter((t) => t.second === null || t.second === c).map((t) => testLine(t, c !== null, refs)),
    );
  const exactLines = (paths: readonly string[]) => {
    const byLength = new Map<number, string[]>();
    for (const path of paths) byLength.set(path.length, [...(byLength.get(path.length) ?? []), path]);
    if (byLength.size === 0) return [];
    const cases = [...byLength].map(([n, same]) => {
      if (same.length > EXACT_CHAIN) {
        const m = refs.maps.push(new Map(same.map((path) => [path, exact.get(path)!]))) - 1;
        return [`case ${n}: { const d = X[${m}].get(p); if (d !== undefined) return d[q]; break; }`];
      }
      const lines = same.map(
        (path) =>
          `if (z === ${path.charCodeAt(n - 1)} && p === E[${refs.paths.push(path) - 1}]) return D[${refs.decisions.push(exact.get(path)!) - 1}][q];`,
      );
      return [`case ${n}:`, ...indent([...lines, 'break;'])];
    });
    return ['switch (n) {', ...indent(cases.flat()), '}'];
  };

  const chars = [
    ...new Set([...scan.flatMap((t) => (t.second === null ? [] : [t.second])), ...exactBySecond.keys()]),
  ].filter((c) => c !== NO_SECOND_CHAR);
  const cases = chars.map((c) => [
    `case ${c}: {`,
    ...indent(orNull([...exactLines(exactBySecond.get(c) ?? []), ...scanLines(c)])),
    '}',
  ]);
  // Exact paths shorter than two characters ("/") meet the default case, with everything else no case takes.
  const fallback = orNull([...exactLines(exactBySecond.get(NO_SECOND_CHAR) ?? []), ...scanLines(null)]);

  const body = [
    'const n = p.length;',
    ...(scan.some((t) => t.condition?.kind === 'template' && fixedLayout(t.condition.value)?.includes('hex'))
      ? ['let c = 0; // a character under a hex test']
      : []),
    `switch (n > 1 ? p.charCodeAt(1) : ${NO_SECOND_CHAR}) {`,
    ...indent([...cases.flat(), 'default: {', ...indent(fallback), '}']),
    '}',
  ];
  const source = `return function ${name}(p, q, z) {\n${indent(body).join('\n')}\n};`;
  // Frozen, so that V8 folds `D[k]` (a constant index into a constant, frozen
  // array) to the array it holds. (Not the inner arrays: V8 reads a frozen
  // array at a variable index, `[q]`, through a generic call.)
  const decisions = Object.freeze([...refs.decisions]);
  return new Function('D', 'T', 'E', 'M', 'X', source)(
    decisions,
    refs.texts,
    refs.paths,
    refs.matchers,
    refs.maps,
  ) as Decide<D>;
}

function indent(lines: readonly string[]): string[] {
  return lines.map((l) => `  ${l}`);
}

/** Ends `lines` with `return null` unless they already end with an unconditional return. */
function orNull(lines: string[]): string[] {
  return lines.at(-1)?.startsWith('return ') ? lines : [...lines, 'return null;'];
}

/** Lines after an unconditional `return` are dead: drop them. */
function upToUnconditional(lines: string[]): string[] {
  const i = lines.findIndex((l) => l.startsWith('return '));
  return i === -1 ? lines : lines.slice(0, i + 1);
}

interface ScanTest {
  readonly condition: PathCondition | null;
  /** Index of the rule's decisions (by presence) in `D`. */
  readonly decision: number;
  /** The presences for which the rule decides, one bit each. */
  readonly mask: number;
  /** The mask of a rule that decides for every presence. */
  readonly all: number;
}

/**
 * A fitting rule decides when it counts by an identity of the request: its
 * presence bit test comes first (`(mask >> q) & 1`: bit q of the mask is set
 * when the rule counts by an identity that presence q carries), so a rule that
 * could not decide reads no character of the path.
 * `secondKnown`: the dispatch has already checked the character after "/".
 */
function testLine<D>(t: ScanTest, secondKnown: boolean, refs: Refs<D>): string {
  const guards = [...(t.mask === t.all ? [] : [`((${t.mask} >> q) & 1) !== 0`])];
  const test = testSource(t.condition, secondKnown, refs);
  if (test !== 'true') guards.push(test);
  const decide = `return D[${t.decision}][q];`;
  return guards.length === 0 ? decide : `if (${guards.join(' && ')}) ${decide}`;
}

/** The code of the character after "/" that every path fitting `c` has, or null when `c` does not fix it. */
function secondChar(c: PathCondition | null): number | null {
  if (c === null) return null;
  const head = c.kind === 'path' || c.kind === 'prefix' ? c.value : c.kind === 'contains' ? '' : literalHead(c.value);
  return head.length >= 2 ? head.charCodeAt(1) : null;
}

/** JavaScript source of a boolean test of `p` (length `n`) for one condition. */
function testSource<D>(c: PathCondition | null, secondKnown: boolean, refs: Refs<D>): string {
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

function matcherIndex<D>(c: PathCondition, refs: Refs<D>): number {
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
