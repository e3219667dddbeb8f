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
 * file) and fixed identifiers.
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
  // Identity presence (see Presence): bit 0 a non-empty x-api-key, bit 1 a
  // non-empty x-user-id. A repeated header (an array) counts when any value is non-empty.
  const headers = request.headers;
  const key = headers['x-api-key'];
  const user = headers['x-user-id'];
  const q =
    (typeof key === 'string' ? (key.length > 0 ? 1 : 0) : key !== undefined && A(key) ? 1 : 0) |
    (typeof user === 'string' ? (user.length > 0 ? 2 : 0) : user !== undefined && A(user) ? 2 : 0);
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

function anyNonEmpty(values: readonly string[]): boolean {
  return values.some((x) => x.length > 0);
}
