import { describe, expect, it } from 'vitest';
import { compile } from '../../src/rules/compile.ts';
import { lint } from '../../src/rules/lint.ts';
import { parseRuleFile } from '../../src/rules/parse.ts';

/** In-flight limits ({by, concurrent, until}) and guards with a match of their own: parsing and the compiled matcher. */
const FILE = `
guards:
  - { id: per-ip, by: ip, count: 1000, per: 10s, category: Per client IP }
  - id: runs-in-flight
    by: api-key
    concurrent: 3
    until: run
    category: Runs in flight (API)
    match:
      method: POST
      any: [{ template: "/threads/{uuid}/runs" }, { template: "/threads/{uuid}/runs/stream" }, { path: /runs/stream }]
rules:
  - id: streams
    match: { method: POST, path: /runs/stream }
    limits:
      - { by: api-key, concurrent: 2, category: Streams (API) }
      - { by: ip, count: 100, per: 10s, category: Streams (IP) }
  - id: default
    limits: [{ by: api-key, count: 1000, per: 10s, category: Default }]
`;

const set = parseRuleFile(FILE, 'f.yaml');
const matcher = compile(set.rules, set.guards);
const post = (path: string, headers: Record<string, string> = { 'x-api-key': 'k' }) =>
  matcher.match({ method: 'POST', path, headers, ip: '192.0.2.1' });

describe('in-flight limits in a rule file', () => {
  it('parses {by, concurrent} as N slots held until the response ends, and until: run', () => {
    const [streams] = set.rules;
    expect(streams!.limits[0]).toMatchObject({
      by: 'api-key',
      count: 2,
      perSeconds: 0,
      until: 'response',
      policy: 'streams.api-key',
      scope: 'streams.in-flight',
    });
    expect(streams!.limits[1]).toMatchObject({ until: null, perSeconds: 10, scope: 'streams' });
    const guard = set.guards.find((g) => g.id === 'runs-in-flight')!;
    expect(guard.limit).toMatchObject({ until: 'run', count: 3, policy: 'guard.runs-in-flight' });
    expect(guard.limit.scope).toBe('guard.runs-in-flight.in-flight');
    expect(guard.alternatives).toHaveLength(3);
  });

  it('a guard with a match applies whatever rule decides, only to the requests its match fits', () => {
    const policies = (path: string, h?: Record<string, string>) => post(path, h)!.limits.map((l) => l.policy);
    expect(policies('/runs/stream')).toEqual(['streams.api-key', 'streams.ip', 'guard.per-ip', 'guard.runs-in-flight']);
    const thread = '/threads/0b5c2f6e-8f5a-4c1e-9d3b-2a7e4f6c8d10/runs';
    expect(policies(thread)).toEqual(['default.api-key', 'guard.per-ip', 'guard.runs-in-flight']);
    expect(policies(`${thread}/`)).toEqual(['default.api-key', 'guard.per-ip', 'guard.runs-in-flight']);
    expect(policies('/threads')).toEqual(['default.api-key', 'guard.per-ip']);
    expect(
      matcher.match({ method: 'GET', path: thread, headers: { 'x-api-key': 'k' }, ip: '192.0.2.1' })!.limits,
    ).toHaveLength(2);
    // Without its identity the guard does not apply.
    expect(policies('/runs/stream', {})).toEqual(['streams.ip', 'guard.per-ip']);
  });

  it('hands back the same decision object for the same combination (nothing allocated per request)', () => {
    expect(post('/runs/stream')).toBe(post('/runs/stream'));
  });

  it('lints guard-tighter only between limits of one kind', () => {
    const tight = parseRuleFile(
      `guards:
  - { id: few, by: api-key, concurrent: 1, category: G }
rules:
  - id: r
    limits:
      - { by: api-key, concurrent: 5, category: R }
  - id: s
    limits:
      - { by: ip, count: 1, per: 1s, category: S }
`,
      't.yaml',
    );
    const findings = lint(tight).filter((f) => f.kind === 'guard-tighter');
    expect(findings.map((f) => f.reason)).toEqual([
      'its api-key limit (5 in flight) is never reached in full: guard "few" (line 2) allows 1 in flight per api-key',
    ]);
  });
});
