import { describe, expect, it } from 'vitest';
import { compile } from '../../src/rules/compile.ts';
import { loadRuleFile } from '../../src/rules/load.ts';
import { parseRuleFile } from '../../src/rules/parse.ts';
import { fixedLayout, isHex, templateMatcher } from '../../src/rules/template.ts';
import type { Rule } from '../../src/rules/types.ts';
import { referenceMatch } from '../../support/reference-matcher.ts';

/**
 * Edge cases of the code the matcher tables generate (scan-code.ts,
 * entry-code.ts): the unrolled {uuid} test, exact paths compared whole after
 * their last character, the leading "/" compared last, the Map fallback of
 * many exact paths. Each case is checked against the naive reference as well
 * as against the expected rule.
 */

const U = '3f2a9c1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b';
const HEADER_SETS: readonly Record<string, string>[] = [
  {},
  { 'x-api-key': 'k' },
  { 'x-user-id': 'u' },
  { 'x-api-key': 'k', 'x-user-id': 'u' },
];

function agree(
  rules: readonly Rule[],
  method: string,
  path: string,
  headers: Record<string, string> = { 'x-api-key': 'k' },
): string | null {
  const req = { method, path, headers, ip: '10.0.0.1' };
  const got = compile(rules).match(req);
  const want = referenceMatch(rules, req);
  expect(got?.rule.id ?? null, `${method} ${JSON.stringify(path)}`).toBe(want?.ruleId ?? null);
  expect(got?.limits.map((l) => l.policy) ?? []).toEqual(want?.policies ?? []);
  return got?.rule.id ?? null;
}

describe('isHex', () => {
  it('accepts exactly 0-9, A-F and a-f among all UTF-16 code units', () => {
    const wrong: number[] = [];
    for (let c = 0; c < 0x10000; c++) if (isHex(c) !== /^[0-9A-Fa-f]$/.test(String.fromCharCode(c))) wrong.push(c);
    expect(wrong).toEqual([]);
  });
});

describe('fixedLayout', () => {
  it('fixes every position of a template of literal segments and {uuid}', () => {
    const layout = fixedLayout('/runs/{uuid}/x')!;
    expect(layout).toHaveLength('/runs/'.length + 36 + '/x'.length);
    expect(layout.slice(0, 6)).toEqual([...'/runs/'].map((c) => c.charCodeAt(0)));
    expect(layout.flatMap((t, i) => (t === 0x2d ? [i - 6] : []))).toEqual([8, 13, 18, 23]);
    expect(layout.filter((t) => t === 'hex')).toHaveLength(32);
  });

  it('is null when a segment varies in length', () => {
    expect(fixedLayout('/items/{int}')).toBeNull();
    expect(fixedLayout('/a/{id}/{uuid}')).toBeNull();
  });

  it('fits the same paths as the template walk', () => {
    for (const template of ['/runs/{uuid}', '/{uuid}', '/a/{uuid}/b/{uuid}', '/']) {
      const layout = fixedLayout(template)!;
      const walk = templateMatcher(template);
      const fits = (p: string) =>
        p.length === layout.length &&
        layout.every((t, i) => (t === 'hex' ? isHex(p.charCodeAt(i)) : p.charCodeAt(i) === t));
      for (const p of [
        '/',
        `/${U}`,
        `/runs/${U}`,
        `/runs/${U.toUpperCase()}`,
        `/a/${U}/b/${U}`,
        `/a/${U}/b/${U}x`,
        `/runs/${U.replace('-', 'x')}`,
      ]) {
        expect(fits(p), `${template} ${p}`).toBe(walk(p));
      }
    }
  });
});

describe('the unrolled {uuid} test', () => {
  const { rules } = parseRuleFile(
    `
- id: lookup
  match:
    method: GET
    any:
      - template: /runs/{uuid}
      - template: /v1/{uuid}/feedback
  limits: [{ by: api-key, count: 1, per: 1s, category: A }]
- id: rest
  limits: [{ by: ip, count: 1, per: 1s, category: B }]
`,
    'uuid.yaml',
  );
  const at = (k: number, c: string) => U.slice(0, k) + c + U.slice(k + 1);

  it.each([
    ['lower-case hex', U],
    ['upper-case hex', U.toUpperCase()],
    ['mixed case', 'aBcDeF01-2345-6789-AbCd-eF0123456789'],
    ['all digits', '01234567-8901-2345-6789-012345678901'],
  ])('fits a canonical UUID: %s', (_, uuid) => {
    expect(agree(rules, 'GET', `/runs/${uuid}`)).toBe('lookup');
    expect(agree(rules, 'GET', `/v1/${uuid}/feedback`)).toBe('lookup');
  });

  it.each([
    ['35 characters', U.slice(1)],
    ['37 characters', U + '0'],
    ['37 characters, a dash too many', U + '-'],
    ['no dashes, 36 hex digits', U.replaceAll('-', '') + '0000'],
    ['a dash one place early', U.slice(0, 7) + '-' + U[7] + U.slice(9)],
    ['a dash one place late', U.slice(0, 8) + U[9] + '-' + U.slice(10)],
    ['8-4-4-4-12 shifted to 9-4-4-4-11', at(8, 'a').slice(0, 9) + '-' + U.slice(9, 13) + U.slice(14) + '0'],
    ['g', at(0, 'g')],
    ['G', at(35, 'G')],
    [': (after 9)', at(3, ':')],
    ['/ (before 0)', at(3, '/')],
    ['@ (before A)', at(20, '@')],
    ['` (before a)', at(20, '`')],
    ['a control character', at(1, '\u0001')],
    ['! (0x21: | 0x20 leaves it outside a-f)', at(1, '!')],
    ['a full-width digit', at(0, '\uff10')],
    ['a code unit whose low byte is a hex digit', at(0, '\u0161')],
    ['a dash in place of a digit', at(0, '-')],
  ])('rejects %s', (_, uuid) => {
    expect(agree(rules, 'GET', `/runs/${uuid}`)).toBe('rest');
    expect(agree(rules, 'GET', `/v1/${uuid}/feedback`)).toBe('rest');
  });

  it('checks the literal segments and separators around it', () => {
    expect(agree(rules, 'GET', `/runs/${U}/`)).toBe('lookup'); // one trailing slash is ignored
    expect(agree(rules, 'GET', `/runs/${U}//`)).toBe('rest');
    expect(agree(rules, 'GET', `/runx/${U}`)).toBe('rest');
    expect(agree(rules, 'GET', `xruns/${U}`)).toBe('rest');
    expect(agree(rules, 'GET', `/v1/${U}/feedbacx`)).toBe('rest');
    expect(agree(rules, 'GET', `/v1/${U}xfeedback`)).toBe('rest');
    expect(agree(rules, 'GET', `/v1/${U}/feedback/x`)).toBe('rest');
    expect(agree(rules, 'POST', `/runs/${U}`)).toBe('rest');
    expect(agree(rules, 'GET', `/runs/${U}`, {})).toBe('rest'); // lookup counts by api-key only
  });
});

describe('exact paths', () => {
  // Paths of one length that share their last character, and more than
  // EXACT_CHAIN (8) paths of one length, which get a Map.
  const many = Array.from({ length: 12 }, (_, i) => `/p${String.fromCharCode(97 + i)}x`);
  const { rules } = parseRuleFile(
    `
- id: same-end
  match:
    any:
      - path: /ab/z
      - path: /cd/z
      - path: /a
      - path: /
  limits: [{ by: api-key, count: 1, per: 1s, category: A }]
- id: many
  match:
    any:
${many.map((p) => `      - path: ${p}`).join('\n')}
  limits: [{ by: user-ip, count: 1, per: 1s, category: B }]
- id: rest
  limits: [{ by: ip, count: 1, per: 1s, category: C }]
`,
    'exact.yaml',
  );

  it.each(['/ab/z', '/cd/z', '/a', '/', '/ab/z/', '/a/', '//'])('%s is same-end', (path) => {
    expect(agree(rules, 'GET', path)).toBe('same-end');
  });

  it.each(['/ab/y', '/cb/z', '/ad/z', '/ab/zz', '/b', 'a', '', '///', 'xab/z', '/ab\\z'])('%s is not', (path) => {
    expect(agree(rules, 'GET', path)).toBe('rest');
  });

  it('a path among many of one length meets its rule, a near miss does not', () => {
    for (const p of many) expect(agree(rules, 'PUT', p, { 'x-user-id': 'u' })).toBe('many');
    expect(agree(rules, 'PUT', '/pzx', { 'x-user-id': 'u' })).toBe('rest');
    expect(agree(rules, 'PUT', '/pax', {})).toBe('rest');
  });
});

describe('paths that are not normalised (the leading "/" is compared last)', () => {
  // The edge only matches normalised paths, but the matcher keeps the reference's
  // semantics for any string.
  const paths = [
    '',
    'a',
    'auth',
    'xauth',
    'xauth/x',
    'runs/query',
    'xruns/query',
    'x/charts',
    'xv1/metadata/submit',
    'r',
    'runs',
    `runs/${U}`,
    `xruns/${U}`,
    'xrepos',
    '\\auth',
  ];
  const synthetic = parseRuleFile(
    `
- id: head-glob
  match: { glob: "/*/one" }
  limits: [{ by: ip, count: 1, per: 1s, category: A }]
- id: root-template
  match: { template: "/{uuid}" }
  limits: [{ by: ip, count: 1, per: 1s, category: A }]
- id: rest
  limits: [{ by: ip, count: 1, per: 1s, category: B }]
`,
    'unnormalised.yaml',
  ).rules;

  for (const region of ['us', 'eu'] as const) {
    it(`agree with the reference on rules/${region}.yaml`, () => {
      const { rules } = loadRuleFile(`rules/${region}.yaml`);
      for (const method of ['GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS', 'PURGE']) {
        for (const path of paths) {
          for (const headers of HEADER_SETS) agree(rules, method, path, headers);
        }
      }
    });
  }

  it('agree with the reference on globs and templates with a short literal head', () => {
    for (const path of [...paths, 'x/one', '/x/one', `x${U}`, `/${U}`, `${U}`]) agree(synthetic, 'GET', path);
  });
});
