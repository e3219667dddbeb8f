import { normalizePath } from '../../src/rules/normalize-path.ts';
import type { Rule } from '../../src/rules/types.ts';
import type { ReferenceRequest } from '../../support/reference-matcher.ts';

/**
 * Random requests for the differential test (differential.test.ts), built
 * from the rule files' own fragments, near misses included: real values and
 * plausible-but-wrong ones in every placeholder, mutated fragments, odd
 * prefixes and suffixes, and identity headers present, empty or repeated.
 */

// GET and POST weigh more, as in real traffic; 'get' and 'constructor' are not methods any rule names.
const METHODS = [
  'GET',
  'GET',
  'GET',
  'POST',
  'POST',
  'POST',
  'HEAD',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'TRACE',
  'CONNECT',
  'PURGE',
  'get',
  'constructor',
];
const WORDS = [
  'runs',
  'stats',
  'x',
  'api',
  'v1',
  'v2',
  'batch',
  'query',
  'trigger',
  'sessions',
  'info',
  'submit',
  'metadata',
  'charts',
  'examples',
  'auth',
  'a.b',
  '...',
  'ümlaut',
  '%2F',
  '%41uth',
  '%7e',
];
const FIXED = [
  '/',
  '/runs/stats/x',
  '/xv1/metadata/submit',
  '/authx',
  '/auth/',
  '/runsx',
  '/runs/',
  '/runs/stats',
  '/v1/beacon/',
  '/repos2',
  '/public/downloads',
  '/info/',
];

type Rng = () => number;
const int = (r: Rng, n: number) => Math.floor(r() * n);
const pick = <T>(r: Rng, xs: readonly T[]): T => xs[int(r, xs.length)]!;
const hex8 = (r: Rng) =>
  int(r, 2 ** 32)
    .toString(16)
    .padStart(8, '0');
const uuid = (r: Rng) => {
  const h = hex8(r) + hex8(r) + hex8(r) + hex8(r);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

/** Something in a placeholder's place: real values, near misses, or other shapes. */
const FILLERS: readonly ((r: Rng) => string)[] = [
  uuid,
  (r) => uuid(r).toUpperCase(),
  (r) => ((u) => u.slice(0, 9) + u.slice(9).toUpperCase())(uuid(r)),
  (r) => uuid(r).slice(1),
  (r) => uuid(r) + '0',
  (r) => uuid(r).replace('-', ''),
  (r) => 'g' + uuid(r).slice(1),
  (r) => `${int(r, 100000)}`,
  (r) => `-${int(r, 9)}`,
  (r) => `${int(r, 9)}a`,
  (r) => pick(r, WORDS),
  () => '',
];
const filler = (r: Rng) => pick(r, FILLERS)(r);

/** Replaces glob syntax and placeholders with something plausible (not always matching). */
function instantiate(r: Rng, pattern: string): string {
  return pattern
    .replace(/\{(uuid|id|int)\}/g, () => filler(r))
    .replace(/\*\*/g, () =>
      Array.from({ length: int(r, 3) }, () => '/' + pick(r, WORDS))
        .join('')
        .slice(1),
    )
    .replace(/\*/g, () => pick(r, ['', 'x', 'ab', '.json', pick(r, WORDS)]))
    .replace(/\?/g, () => pick(r, ['a', '.', '1', '']))
    .replace(/\{([^{}]*)\}/g, (_, body: string) => pick(r, body.split(',')))
    .replace(/\[!?\^?([^\]]*)\]/g, (_, body: string) => pick(r, [body[0] ?? 'a', 'z']));
}

export function fragmentsOf(rules: readonly Rule[]): string[] {
  const out = new Set<string>();
  for (const rule of rules) {
    for (const alt of rule.alternatives) {
      if (!alt.path) continue;
      const v = alt.path.value;
      out.add(v);
      for (const seg of v.split('/')) if (seg) out.add('/' + seg);
      for (const piece of v.split(/[*?[\]{}()!+@|]+/)) if (piece) out.add(piece);
    }
  }
  return [...out];
}

/** A slightly wrong version of a fragment: one character changed, dropped or doubled, or case flipped. */
function mutate(r: Rng, s: string): string {
  if (s.length < 2) return s;
  const i = 1 + int(r, s.length - 1);
  return pick(r, [
    s.slice(0, i) + pick(r, ['x', '.', '/', '-', 'Z']) + s.slice(i + 1),
    s.slice(0, i) + s.slice(i + 1),
    s.slice(0, i) + s[i] + s.slice(i),
    s.toUpperCase(),
  ]);
}

function randomPath(r: Rng, fragments: readonly string[]): string {
  const start = r();
  if (start < 0.04) return pick(r, FIXED);
  if (start < 0.08) return pick(r, fragments); // a rule's own text as the whole path, `/x/{a,b}/y` included
  let p = '';
  const parts = r() < 0.5 ? 1 : 2 + int(r, 2);
  for (let k = 0; k < parts; k++) {
    const roll = r();
    const f = pick(r, fragments);
    if (roll < 0.45) p += instantiate(r, f);
    else if (roll < 0.55)
      p += f; // raw pattern text, braces and stars included
    else if (roll < 0.65) p += mutate(r, instantiate(r, f));
    else if (roll < 0.75) p += instantiate(r, f).repeat(2);
    else if (roll < 0.9) p += '/' + pick(r, WORDS);
    else p += '/' + filler(r);
  }
  if (!p.startsWith('/') || r() < 0.1)
    p = pick(r, ['/', '/api', '/x', '/v1', '/api/v1', '//', '/./', '/a/..']) + (p.startsWith('/') ? p.slice(1) : p);
  if (r() < 0.25)
    p += pick(r, [
      '/',
      '//',
      'x',
      '/x',
      '.json',
      '?q=/runs/stats',
      '#frag',
      '/.',
      '/..',
      '/./',
      '\\',
      '%2F',
      '%',
      '/trigger',
    ]);
  return p;
}

function randomHeader(r: Rng, value: string): string | string[] | undefined {
  const roll = r();
  if (roll < 0.4) return undefined;
  if (roll < 0.5) return '';
  if (roll < 0.9) return value;
  return pick(r, [[value, 'second'], [''], [], ['', '']]);
}

export function randomRequest(r: Rng, fragments: readonly string[]): { raw: string; req: ReferenceRequest } | null {
  const raw = randomPath(r, fragments);
  let path: string;
  try {
    path = normalizePath(raw);
  } catch {
    return null;
  }
  const headers: Record<string, string | string[] | undefined> = {};
  const key = randomHeader(r, `key-${int(r, 1000)}`);
  if (key !== undefined || r() < 0.5) headers['x-api-key'] = key;
  const user = randomHeader(r, `user-${int(r, 1000)}`);
  if (user !== undefined) headers['x-user-id'] = user;
  return { raw, req: { method: pick(r, METHODS), path, headers, ip: `10.0.${int(r, 256)}.${int(r, 256)}` } };
}
