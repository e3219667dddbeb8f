import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { compile, type Match, type MatchRequest } from '../../src/rules/compile.ts';
import { identityOf, type Headers } from '../../src/rules/identity.ts';
import { REGIONS, type Region } from '../../src/region.ts';
import { loadRuleFile, regionRuleFile } from '../../src/rules/load.ts';
import { normalizePath } from '../../src/rules/normalize-path.ts';
import { CASES, HEADERS, IDENTITY, IP, KEY, ROWS, USER, type Expected } from './spec-table.ts';

/**
 * The rule files against the platform's published limit table (spec-table.ts),
 * in both regions, and the traps around it.
 */

const rulesDir = fileURLToPath(new URL('../../rules/', import.meta.url));

function countIn(region: Region, count: Expected['count']): number {
  return typeof count === 'number' ? count : count[region];
}

describe.each(REGIONS)('the spec table in rules/%s.yaml', (region) => {
  const matcher = compile(loadRuleFile(regionRuleFile(rulesDir, region)).rules);
  const request = (method: string, path: string, headers: Headers = {}): MatchRequest => ({
    method,
    path,
    headers,
    ip: IP,
  });
  const match = (method: string, path: string, headers: Headers = {}): Match | null =>
    matcher.match(request(method, path, headers));

  it('covers every row of the table', () => {
    expect(Object.keys(ROWS)).toHaveLength(29);
    expect(new Set(CASES.map(([row]) => row))).toEqual(new Set(Object.keys(ROWS)));
  });

  it.each(CASES.map(([row, method, path, who]) => [method, path, who, ROWS[row].rule, row] as const))(
    '%s %s (%s) → %s, row "%s"',
    (method, path, who, _rule, row) => {
      const want = ROWS[row];
      const req = request(method, path, HEADERS[who]);
      const m = matcher.match(req);
      expect(m?.rule.id).toBe(want.rule);
      expect(m!.limits).toHaveLength(1);
      expect(m!.limits[0]).toEqual({
        by: want.by,
        count: countIn(region, want.count),
        perSeconds: want.per,
        until: null,
        category: want.category,
        policy: `${want.rule}.${want.by}`,
        scope: want.rule,
        guard: null,
      });
      expect(identityOf(req, want.by)).toBe(IDENTITY[want.by]);
    },
  );

  describe('traps', () => {
    it('GET /runs/stats with a key is runs-stats (not run-lookup, not default), at the region’s count', () => {
      const m = match('GET', '/runs/stats', HEADERS.key);
      expect(m?.rule.id).toBe('runs-stats');
      expect(m!.limits.map((l) => [l.by, l.count, l.perSeconds])).toEqual([['api-key', region === 'us' ? 1 : 20, 10]]);
    });

    it('GET /runs/not-a-uuid with a key is default: run-lookup takes real UUIDs only', () => {
      expect(match('GET', '/runs/not-a-uuid', HEADERS.key)?.rule.id).toBe('default');
      expect(match('GET', '/runs/0b8e4d7c-3f2a-4c1e-9d6b-5a4f3e2d1c0', HEADERS.key)?.rule.id).toBe('default');
    });

    it('/repos without any identity header falls to public (repos counts keys and users only)', () => {
      const m = match('GET', '/repos', {});
      expect(m?.rule.id).toBe('public');
      expect(m!.limits.map((l) => l.policy)).toEqual(['public.ip']);
    });

    it('an empty x-api-key counts as no key', () => {
      expect(match('GET', '/repos', { 'x-api-key': '' })?.rule.id).toBe('public');
      expect(match('GET', '/repos', { 'x-api-key': '', 'x-user-id': USER })?.limits.map((l) => l.by)).toEqual([
        'user-ip',
      ]);
    });

    it('POST /runs/query with both a key and a user id applies both buckets', () => {
      const req = request('POST', '/runs/query', { 'x-api-key': KEY, 'x-user-id': USER });
      const m = matcher.match(req);
      expect(m?.rule.id).toBe('runs-query');
      expect(
        m!.limits.map((l) => ({ by: l.by, count: l.count, per: l.perSeconds, id: identityOf(req, l.by) })),
      ).toEqual([
        { by: 'api-key', count: 15, per: 10, id: KEY },
        { by: 'user-ip', count: 300, per: 10, id: `${USER}\u0000${IP}` },
      ]);
    });

    it('the method matters: GET /runs/query with a key is default', () => {
      expect(match('GET', '/runs/query', HEADERS.key)?.rule.id).toBe('default');
    });

    it('a trailing slash is ignored: /runs/query/ is runs-query', () => {
      expect(match('POST', '/runs/query/', HEADERS.key)?.rule.id).toBe('runs-query');
      expect(match('POST', '/auth/', HEADERS.key)?.rule.id).toBe('auth');
    });

    it.each(['/foo/../runs/query', '/runs/%2e%2e/runs/query', '//runs//query', '/runs/./query?x=1', '/runs\\query'])(
      'the normalised form of %s is runs-query, never default',
      (target) => {
        const m = match('POST', normalizePath(target), HEADERS.key);
        expect(m?.rule.id).toBe('runs-query');
      },
    );

    it('a keyed OPTIONS request is IP-limited only (high throughput), whatever its path', () => {
      const m = match('OPTIONS', '/runs/query', { 'x-api-key': KEY, 'x-user-id': USER });
      expect(m?.rule.id).toBe('high-throughput-public');
      expect(m!.limits.map((l) => l.by)).toEqual(['ip']);
    });
  });
});
