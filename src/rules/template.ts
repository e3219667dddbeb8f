/**
 * Path templates: literal segments and typed placeholders, one per segment.
 *   {uuid}  a canonical UUID: 8-4-4-4-12 hex digits (either case)
 *   {id}    any one non-empty segment
 *   {int}   one or more decimal digits
 * Compiled to a character walk rather than a RegExp: a template is tested on
 * the hot path, and entering the RegExp engine costs more than the walk. A
 * template whose segments all have a fixed length (literal segments and
 * {uuid}) also has a layout (`fixedLayout`), from which the matcher tables
 * generate one unrolled test (scan-code.ts).
 */
export const PLACEHOLDER_TYPES = ['uuid', 'id', 'int'] as const;
type Placeholder = (typeof PLACEHOLDER_TYPES)[number];

const PLACEHOLDER = /^\{([a-z]+)\}$/;
const SLASH = 0x2f;
/** Where a canonical UUID (8-4-4-4-12) has its dashes. */
const UUID_DASHES = [8, 13, 18, 23];

/** Why `template` is unusable, or null. Assumes it starts with "/". */
export function templateProblem(template: string): string | null {
  for (const seg of template.split('/')) {
    if (!seg.includes('{') && !seg.includes('}')) continue;
    const m = PLACEHOLDER.exec(seg);
    if (!m) return `bad template "${template}": a placeholder must be a whole segment like {uuid}, got "${seg}"`;
    if (!PLACEHOLDER_TYPES.includes(m[1] as Placeholder)) {
      return `bad template "${template}": unknown placeholder {${m[1]}} (known: ${PLACEHOLDER_TYPES.map((k) => `{${k}}`).join(', ')})`;
    }
  }
  return null;
}

const LITERAL = 0;
const TYPE_CODE: Record<Placeholder, number> = { id: 1, int: 2, uuid: 3 };

/** A test of whole paths against a valid template. */
export function templateMatcher(template: string): (path: string) => boolean {
  const parts = template.split('/').slice(1);
  // Parallel arrays keep the walk monomorphic.
  const kinds = Uint8Array.from(parts, (seg) => TYPE_CODE[PLACEHOLDER.exec(seg)?.[1] as Placeholder] ?? LITERAL);
  const literals = parts.map((seg, k) => (kinds[k] === LITERAL ? seg : ''));
  const count = parts.length;
  return (p) => {
    const n = p.length;
    let i = 0;
    for (let k = 0; k < count; k++) {
      if (i >= n || p.charCodeAt(i) !== SLASH) return false;
      const start = ++i;
      while (i < n && p.charCodeAt(i) !== SLASH) i++;
      if (!segmentFits(kinds[k]!, literals[k]!, p, start, i)) return false;
    }
    return i === n;
  };
}

function segmentFits(kind: number, literal: string, p: string, start: number, end: number): boolean {
  switch (kind) {
    case LITERAL:
      if (end - start !== literal.length) return false;
      for (let k = 0; k < literal.length; k++) if (p.charCodeAt(start + k) !== literal.charCodeAt(k)) return false;
      return true;
    case 1: // id
      return end > start;
    case 2: // int
      if (end === start) return false;
      for (let i = start; i < end; i++) if (!isDigit(p.charCodeAt(i))) return false;
      return true;
    default: // uuid
      if (end - start !== 36) return false;
      for (let k = 0; k < 36; k++) {
        const c = p.charCodeAt(start + k);
        if (k === 8 || k === 13 || k === 18 || k === 23 ? c !== 0x2d : !isHex(c)) return false;
      }
      return true;
  }
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/**
 * 0-9, A-F or a-f. `c | 0x20` maps A-F onto a-f and nothing else onto a-f, and
 * `>>> 0` turns a negative difference into a large number: two unsigned range
 * tests. scan-code.ts generates the same expression.
 */
export function isHex(c: number): boolean {
  return (c - 0x30) >>> 0 < 10 || ((c | 0x20) - 0x61) >>> 0 < 6;
}

/** What one character of a fixed-layout path must be: that UTF-16 code unit, or any hex digit. */
export type CharTest = number | 'hex';

/**
 * The paths a template fits, position by position, when every segment has a
 * fixed length (literal segments and {uuid}): a path fits exactly when it has
 * as many characters as the layout and each passes its test. Segment
 * boundaries need no search: they sit at fixed positions, and no segment of
 * such a template can hold a "/". Null when a segment varies in length
 * ({id}, {int}).
 */
export function fixedLayout(template: string): CharTest[] | null {
  const layout: CharTest[] = [];
  for (const seg of template.split('/').slice(1)) {
    layout.push(SLASH);
    const type = PLACEHOLDER.exec(seg)?.[1] as Placeholder | undefined;
    if (type === undefined) for (let k = 0; k < seg.length; k++) layout.push(seg.charCodeAt(k));
    else if (type === 'uuid') for (let k = 0; k < 36; k++) layout.push(UUID_DASHES.includes(k) ? 0x2d : 'hex');
    else return null;
  }
  return layout;
}
