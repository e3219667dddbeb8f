import { IDENTITY_HEADERS } from './identity.ts';
import type { Decide } from './scan-code.ts';

/**
 * Generates a matcher's entry function: from a request to its method's table
 * (scan-code.ts), given the identity presence, the match path and its last
 * character.
 *
 * It is generated once per compiled matcher rather than written as a closure:
 * all closures of one function share their call-site feedback, so a closure's
 * call of "the table of this method" sees the tables of every matcher ever
 * compiled (both regions, every reload) and V8 makes it a generic call. Each
 * call site of a generated entry only ever calls one table, which V8 calls
 * directly or inlines. (On the bench mix the two cost about the same
 * instructions; the generated entry does not degrade with reloads.)
 *
 * Safety: the source holds only the method names of `tables` (checked to be
 * plain upper-case words; the callers pass METHODS, never text of a rule
 * file), the identity headers of the identity table (checked to be plain
 * lower-case header names) and fixed identifiers.
 */
/** What the entry reads of a MatchRequest (compile.ts). */
export interface EntryRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
}

export type Entry<D> = (request: EntryRequest) => D | null;

/**
 * `tables`: the table of each method, in the order their names are tested;
 * `other`: the table of every other method.
 */
export function compileEntry<D>(tables: ReadonlyMap<string, Decide<D>>, other: Decide<D>): Entry<D> {
  const methods = [...tables.keys()];
  for (const m of methods) if (!/^[A-Z]+$/.test(m)) throw new Error(`not a method name: ${m}`);
  const source = `return function match(request) {
  // Identity presence (see Presence): bit i set when the identity header
  // IDENTITY_HEADERS[i] is non-empty. A repeated header (an array) counts when any value is non-empty.
  const headers = request.headers;
${presenceSource(IDENTITY_HEADERS)}
  // The match path: one trailing slash ignored (see matchPath). Its last
  // character goes to the table too, which starts every suffix test with it.
  let p = request.path;
  const n = p.length;
  let z = n > 0 ? p.charCodeAt(n - 1) : -1;
  if (z === 47 && n > 1) {
    p = p.slice(0, n - 1);
    z = p.charCodeAt(n - 2);
  }
  switch (request.method) {
${methods.map((m, i) => `    case '${m}': return T${i}(p, q, z);`).join('\n')}
    default: return O(p, q, z);
  }
};`;
  const names = methods.map((_, i) => `T${i}`);
  return new Function('A', 'O', ...names, source)(anyNonEmpty, other, ...tables.values()) as Entry<D>;
}

/**
 * The statements that set `q`, the presence, from `headers`: each identity header read once, by its name as a
 * constant property key, and tested for a non-empty value; bit i for IDENTITY_HEADERS[i].
 */
function presenceSource(names: readonly string[]): string {
  for (const name of names) if (!/^[a-z0-9-]+$/.test(name)) throw new Error(`not a header name: ${name}`);
  if (names.length === 0) return '  const q = 0;';
  const reads = names.map((name, i) => `  const h${i} = headers['${name}'];`);
  const bits = names.map((_, i) => {
    const h = `h${i}`;
    const bit = 1 << i;
    return `(typeof ${h} === 'string' ? (${h}.length > 0 ? ${bit} : 0) : ${h} !== undefined && A(${h}) ? ${bit} : 0)`;
  });
  return [...reads, `  const q =\n    ${bits.join(' |\n    ')};`].join('\n');
}

function anyNonEmpty(values: readonly string[]): boolean {
  return values.some((x) => x.length > 0);
}
