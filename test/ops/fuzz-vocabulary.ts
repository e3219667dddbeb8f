/**
 * The vocabulary the fuzz cases (fuzz-cases.ts) are drawn from: seeded-PRNG helpers, methods and paths valid, odd and
 * bad, broken JSON bodies, and the raw request writer.
 */

export type Rng = () => number;
export const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;
export const int = (rng: Rng, lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1));
export const token = (rng: Rng, n: number, alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789') =>
  Array.from({ length: n }, () => alphabet[Math.floor(rng() * alphabet.length)]).join('');

export const VALID_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'] as const;
/** Not methods to Node's parser: always 400. */
export const INVALID_METHODS = ['FOO', 'GETT', 'get', 'G@T', '\x00GET', 'GE\x7fT', '', '(GET)'] as const;
export const PATHS = [
  '/',
  '/keyed/runs',
  '/keyed/threads/1/runs/stream',
  '/info',
  '/v2/deployments',
  '/runs/query',
  '/api-host/v2/x',
  '/a/b/c',
] as const;

/** Paths the edge normalises and forwards: dot segments, encoded dots, NUL and other escapes kept encoded. */
export const ODD_PATHS = [
  '/a/../b',
  '/../../../etc/passwd',
  '/keyed/%2e%2e/%2E%2E/x',
  '/keyed/..%2f..%2fetc',
  '/./././x',
  '/x%00y',
  '/keyed/%00',
  '/%00/../x',
  '/x/%2F/y',
  '//double//slash//',
  '/a/b/./../../..',
  '/x?q=%zz&..=../..',
  '/x#frag/../..',
  '/%41%42%7e%5F',
  '/keyed/%c3%a9t%C3%A9',
  'http://evil.test/keyed/../x',
  '/' + 'seg/'.repeat(500),
] as const;
/**
 * Paths that can only be refused (400): invalid escapes, targets that are not a path, backslashes (refused by the HTTP
 * adapter before the edge normalises them).
 */
export const BAD_PATHS = [
  '/x%zz',
  '/x%4',
  '/x%',
  '/%G0/y',
  '/keyed/%%41',
  'abc',
  'http:/no-host',
  'ftp://x/y',
  '/a%0',
  '/back\\slash\\..\\x',
  '/keyed\\..\\..\\x',
] as const;

export function request(
  method: string,
  target: string,
  headers: readonly (readonly [string, string])[],
  body: string | Buffer = '',
  version = 'HTTP/1.1',
): string | Buffer {
  const head = `${method} ${target} ${version}\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
  return typeof body === 'string' ? head + body : Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

export const BASE: readonly (readonly [string, string])[] = [
  ['Host', 'edge.fuzz'],
  ['Connection', 'close'],
];

export function json(rng: Rng): string {
  return pick(rng, [
    '{"a":',
    '{"a":1,}',
    "{'a':1}",
    '[1,2',
    '{"a":"\\x"}',
    'null null',
    '{"a":1}{"b":2}',
    '\u0000{}',
    '{"' + 'x'.repeat(200),
    '{"a":NaN}',
    '',
  ]);
}
