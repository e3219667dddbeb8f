import { describe, expect, it } from 'vitest';
import { compile, type Matcher } from '../../src/rules/compile.ts';
import { loadRuleFile } from '../../src/rules/load.ts';
import { normalizePath } from '../../src/rules/normalize-path.ts';
import { parseRuleFile } from '../../src/rules/parse.ts';
import type { Rule } from '../../src/rules/types.ts';
import { referenceMatch, type ReferenceRequest } from './reference-matcher.ts';
import { prng } from '../helpers/prng.ts';

/**
 * The compiled matcher against the naive reference on random requests built
 * from the rule files' own fragments, near misses included. Deterministic: the
 * seed is printed, and DIFF_SEED=<n> replays a run; DIFF_VERBOSE=1 prints how
 * many requests each rule decided.
 */

const SEED = Number(process.env.DIFF_SEED ?? 0x5eed_2024);

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

function fragmentsOf(rules: readonly Rule[]): string[] {
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

function randomRequest(r: Rng, fragments: readonly string[]): { raw: string; req: ReferenceRequest } | null {
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

interface Outcome {
  readonly ruleId: string | null;
  readonly policies: readonly string[];
}
function compiledOutcome(m: Matcher, req: ReferenceRequest): Outcome {
  const hit = m.match(req);
  return hit ? { ruleId: hit.rule.id, policies: hit.limits.map((l) => l.policy) } : { ruleId: null, policies: [] };
}

/** Runs `n` requests through both matchers; returns differences and which rule ids decided (null = none). */
function differential(rules: readonly Rule[], seed: number, n: number) {
  console.log(`differential: ${n} requests, seed ${seed} (base seed ${SEED}; replay with DIFF_SEED=${SEED})`);
  const r = prng(seed);
  const matcher = compile(rules);
  const fragments = fragmentsOf(rules);
  const diffs: string[] = [];
  const decided = new Map<string | null, number>();
  let ran = 0;
  while (ran < n) {
    const g = randomRequest(r, fragments);
    if (!g) continue;
    ran++;
    const want = referenceMatch(rules, g.req) ?? { ruleId: null, policies: [] };
    const got = compiledOutcome(matcher, g.req);
    decided.set(want.ruleId, (decided.get(want.ruleId) ?? 0) + 1);
    if (want.ruleId !== got.ruleId || want.policies.join() !== got.policies.join()) {
      diffs.push(
        `${g.req.method} ${JSON.stringify(g.raw)} → ${JSON.stringify(g.req.path)} headers=${JSON.stringify(g.req.headers)}: reference ${JSON.stringify(want)}, compiled ${JSON.stringify(got)}`,
      );
    }
  }
  return { diffs, decided };
}

function expectAgreement(rules: readonly Rule[], seed: number, n: number, everyRuleDecides: boolean) {
  const { diffs, decided } = differential(rules, seed, n);
  if (process.env.DIFF_VERBOSE) console.log('deciding rule → requests:', Object.fromEntries(decided));
  expect(diffs.length, `${diffs.length} of ${n} requests differ; first ones:\n${diffs.slice(0, 5).join('\n')}`).toBe(0);
  if (everyRuleDecides) {
    const never = rules.filter((rule) => !decided.has(rule.id)).map((rule) => rule.id);
    expect(never, 'the generator never reached these rules').toEqual([]);
  }
  return decided;
}

describe('compiled matcher agrees with the reference', () => {
  for (const [i, region] of (['us', 'eu'] as const).entries()) {
    it(`on 100,000 random requests against rules/${region}.yaml`, () => {
      const { rules } = loadRuleFile(`rules/${region}.yaml`);
      const decided = expectAgreement(rules, SEED + i, 100_000, true);
      expect(decided.has(null), 'the catch-all leaves no request undecided').toBe(false);
    });
  }

  it('on 50,000 random requests against a synthetic rule set with every condition shape', () => {
    const { rules } = parseRuleFile(SYNTHETIC, 'synthetic.yaml');
    const decided = expectAgreement(rules, SEED + 7, 50_000, true);
    expect(decided.get(null), 'some requests meet no rule').toBeGreaterThan(0);
  });
});

// Disagreements the random runs found, kept as named cases so the reason survives.
describe('regressions found by the differential test', () => {
  const cases: [name: string, glob: string, path: string][] = [
    // picomatch's matcher accepts a path equal to the glob's own text; the compiled RegExp alone did not.
    ['a path spelled like its brace glob matches it, as picomatch does', '/x/{a,b}/y', '/x/{a,b}/y'],
    ['a path spelled like its extglob matches it, as picomatch does', '/q/@(a|b)', '/q/@(a|b)'],
    // A trailing "/**" may match nothing, slash included; a literal-head prefilter of "/static/" missed "/static".
    ['"/static/**" fits "/static"', '/static/**', '/static'],
    ['"/static/**" fits "/static/"', '/static/**', '/static/'],
  ];
  for (const [name, glob, path] of cases) {
    it(name, () => {
      const { rules } = parseRuleFile(
        `- id: g\n  match: { glob: "${glob}" }\n  limits: [{ by: ip, count: 1, per: 1s, category: A }]\n`,
        'regression.yaml',
      );
      const req = { method: 'GET', path, headers: {}, ip: '10.0.0.1' };
      expect(referenceMatch(rules, req)?.ruleId).toBe('g');
      expect(compile(rules).match(req)?.rule.id ?? null).toBe('g');
    });
  }
});

/**
 * Shapes the real files lack: method lists, mixed exact/non-exact alternatives, every placeholder, single-identity
 * rules, shadow, no catch-all.
 */
const SYNTHETIC = `
- id: preflight-or-health
  match:
    any:
      - method: [OPTIONS, HEAD]
      - path: /health
      - glob: "**/ping"
  limits: [{ by: ip, count: 1, per: 1s, category: A }]
- id: mixed-key
  match:
    method: [GET, POST]
    any:
      - path: /a/b
      - prefix: /a/b/c
      - path: /z
      - contains: /zz
      - template: /a/{int}
  limits: [{ by: api-key, count: 1, per: 1s, category: B }]
- id: templates-key
  match:
    any:
      - template: /items/{int}/owner/{id}
      - template: /objects/{uuid}
      - template: /v2.1/{id}/x
      - { method: PUT, template: "/put/{uuid}/{int}" }
  limits: [{ by: api-key, count: 1, per: 1s, category: C }]
- id: globs-user
  match:
    method: [PUT, DELETE, PATCH]
    any:
      - glob: "/files/**/*.json"
      - glob: "/x/{a,b}/y"
      - glob: "/c?t/[ab]*"
      - glob: "*/one"
      - glob: "**/deep/**"
      - glob: "**/v2.1/thing"
      - path: /files/index.json
  limits: [{ by: user-ip, count: 1, per: 1s, category: D }]
- id: shadow-exact
  shadow: true
  match: { path: /a/b }
  limits: [{ by: ip, count: 1, per: 1s, category: E }]
- id: trace-both
  match: { method: TRACE }
  limits:
    - { by: api-key, count: 1, per: 1s, category: F }
    - { by: user-ip, count: 1, per: 1s, category: F }
- id: static-tree
  match:
    any:
      - glob: "/static/**"
      - glob: "/v{1,2}/**/x"
      - glob: "/q/?(x|y)"
      - glob: "/lib/*/{a,b}.js"
  limits: [{ by: ip, count: 1, per: 1s, category: G }]
- id: dots
  match:
    any:
      - contains: .json
      - prefix: /v2.1
  limits:
    - { by: user-ip, count: 1, per: 1s, category: G }
    - { by: ip, count: 1, per: 1s, category: G }
- id: post-anything-key
  match: { method: POST, prefix: / }
  limits: [{ by: api-key, count: 1, per: 1s, category: H }]
- id: exact-only-user
  match:
    any:
      - path: /runs
      - { method: GET, path: /auth }
  limits: [{ by: user-ip, count: 1, per: 1s, category: I }]
- id: fallback-user
  limits: [{ by: user-ip, count: 1, per: 1s, category: J }]
`;
