import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadRuleFile, regionRuleFile } from '../../src/rules/load.ts';
import type { Rule } from '../../src/rules/types.ts';

/**
 * The seed's table gives US and EU numbers side by side; they differ in two
 * rows only: /commits (10000/60 in US, 2000/60 in EU, for both identities)
 * and /runs/stats (1/10 in US, 20/10 in EU). Everything else in the two rule
 * files (ids, order, matches, identities, intervals, categories, shadow) must
 * be the same, so a change made to one region and forgotten in the other fails
 * here.
 */

const rulesDir = fileURLToPath(new URL('../../rules/', import.meta.url));

/**
 * The rules without where they were read from: the file names differ by
 * design, and line numbers are about comments, not limits (a comment added to
 * one file only must not read as a difference between the regions).
 */
function comparable(region: 'us' | 'eu'): unknown[] {
  return loadRuleFile(regionRuleFile(rulesDir, region)).rules.map(({ source: _source, ...rest }: Rule) => rest);
}

interface Difference {
  readonly path: string;
  readonly a: unknown;
  readonly b: unknown;
}

/**
 * Every leaf where `a` and `b` differ, as a path. Array elements are named by
 * their `id` (rules) or `by` (limits) when they have one, by index otherwise;
 * an element present on one side only is a difference at that element.
 */
function differences(a: unknown, b: unknown, path = ''): Difference[] {
  if (Object.is(a, b)) return [];
  if (Array.isArray(a) && Array.isArray(b)) {
    const keyOf = (x: unknown, i: number) => {
      const o = x as { id?: unknown; by?: unknown } | null;
      return String(typeof o?.id === 'string' ? o.id : typeof o?.by === 'string' ? o.by : i);
    };
    const ka = a.map(keyOf);
    const kb = b.map(keyOf);
    const keys = [...new Set([...ka, ...kb])];
    return keys.flatMap((k) => {
      const ia = ka.indexOf(k);
      const ib = kb.indexOf(k);
      return differences(ia === -1 ? undefined : a[ia], ib === -1 ? undefined : b[ib], `${path}/${k}`);
    });
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
    return keys.flatMap((k) => differences(a[k], b[k], `${path}/${k}`));
  }
  return [{ path, a, b }];
}

function isPlainObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

describe('rules/us.yaml and rules/eu.yaml', () => {
  const us = comparable('us');
  const eu = comparable('eu');

  it('have the same rule ids in the same order', () => {
    const ids = (rules: unknown[]) => rules.map((r) => (r as Rule).id);
    expect(ids(eu)).toEqual(ids(us));
    expect(ids(us)).toHaveLength(22);
  });

  it('differ exactly where the seed says: commits (both identities) and runs-stats counts', () => {
    expect(differences(us, eu)).toEqual([
      { path: '/commits/limits/api-key/count', a: 10000, b: 2000 },
      { path: '/commits/limits/user-ip/count', a: 10000, b: 2000 },
      { path: '/runs-stats/limits/api-key/count', a: 1, b: 20 },
    ]);
  });
});

describe('differences (the comparison the guarantee rests on)', () => {
  it('sees a changed match, a changed interval and a missing limit', () => {
    const a = [
      {
        id: 'r',
        alternatives: [{ methods: ['GET'], path: null }],
        limits: [{ by: 'ip', perSeconds: 10 }, { by: 'api-key' }],
      },
    ];
    const b = [{ id: 'r', alternatives: [{ methods: ['POST'], path: null }], limits: [{ by: 'ip', perSeconds: 60 }] }];
    expect(differences(a, b).map((d) => d.path)).toEqual([
      '/r/alternatives/0/methods/0',
      '/r/limits/ip/perSeconds',
      '/r/limits/api-key',
    ]);
  });

  it('sees a rule present in one list only, and no difference between equal values', () => {
    expect(differences([{ id: 'x' }], [{ id: 'x' }, { id: 'y' }])).toEqual([
      { path: '/y', a: undefined, b: { id: 'y' } },
    ]);
    expect(differences({ n: [1, { m: 'v' }] }, { n: [1, { m: 'v' }] })).toEqual([]);
  });
});
