import { describe, expect, it } from 'vitest';
import { limitStep } from '../../src/edge/limit.ts';
import { MemoryLimiter } from '../../src/limiter/memory-limiter.ts';
import { compile } from '../../src/rules/compile.ts';
import { lint } from '../../src/rules/lint.ts';
import { parseRuleFile } from '../../src/rules/parse.ts';

/** Guards: parsing, what the compiled matcher appends, the lint, and the limit step's all-or-nothing and shadow rules. */
const FILE = `
guards:
  - { id: per-ip, by: ip, count: 3, per: 1d, category: Per client IP }
  - { id: gen, by: ip, count: 2, per: 1d, category: Generation (per IP), rules: [generate] }
  - { id: keys, by: api-key, count: 1000, per: 1d, category: Per key }
rules:
  - id: generate
    match: { prefix: /generate }
    limits: [{ by: user-ip, count: 30, per: 1h, category: Generation }]
  - id: trial
    match: { prefix: /trial }
    shadow: true
    limits: [{ by: user-ip, count: 1, per: 1d, category: Trial }]
  - id: public
    limits: [{ by: ip, count: 100, per: 60s, category: Public }]
`;

const set = parseRuleFile(FILE, 'g.yaml');
const matcher = compile(set.rules, set.guards);
const req = (path: string, headers: Record<string, string> = {}, ip = '192.0.2.1') => ({
  method: 'GET',
  path,
  headers,
  ip,
});

describe('guards in the compiled matcher', () => {
  it('appends the guards that cover the rule and whose identity is present, in file order', () => {
    const policies = (path: string, h?: Record<string, string>) =>
      matcher.match(req(path, h))!.limits.map((l) => l.policy);
    expect(policies('/generate', { 'x-user-id': 'u' })).toEqual(['generate.user-ip', 'guard.per-ip', 'guard.gen']);
    expect(policies('/x')).toEqual(['public.ip', 'guard.per-ip']);
    expect(policies('/x', { 'x-api-key': 'k' })).toEqual(['public.ip', 'guard.per-ip', 'guard.keys']);
  });

  it('guards never decide: a request no rule decides has no limit at all', () => {
    const only = parseRuleFile(
      'guards: [{ id: g, by: ip, count: 1, per: 1s, category: G }]\nrules:\n  - { id: k, limits: [{ by: api-key, count: 1, per: 1s, category: K }] }\n',
      'o.yaml',
    );
    expect(compile(only.rules, only.guards).match(req('/x'))).toBeNull();
  });

  it('a bare list of rules still loads, with no guards', () => {
    const bare = parseRuleFile('- { id: p, limits: [{ by: ip, count: 1, per: 1s, category: P }] }\n', 'b.yaml');
    expect(bare.guards).toEqual([]);
  });
});

describe('lint: guard-tighter', () => {
  it('reports a guard one client meets before a rule’s per-IP or per-user limit', () => {
    const findings = lint(set).filter((f) => f.kind === 'guard-tighter');
    expect(findings.map((f) => [f.rule, f.reason.match(/guard "([a-z-]+)"/)![1]])).toEqual([
      ['generate', 'per-ip'],
      ['generate', 'gen'],
      ['public', 'per-ip'],
    ]);
    expect(findings[0]!.reason).toBe(
      'its user-ip limit (30 per 3600s) is never reached in full: guard "per-ip" (line 3) allows 3 per 86400s per ip',
    );
  });
});

describe('the limit step with guards', () => {
  const step = () =>
    limitStep({
      matcher: () => matcher,
      limiter: new MemoryLimiter(),
      fallback: new MemoryLimiter(),
      failMode: 'open',
      scheme: { prefix: 't', region: 'us', secret: 's' },
    });

  it('a fresh user id per request is held to the guard; a denial takes no token from any bucket', async () => {
    const limit = step();
    const verdicts = [];
    for (let i = 0; i < 5; i++) verdicts.push(await limit(req('/generate', { 'x-user-id': `u${i}` })));
    expect(verdicts.map((v) => v!.decision)).toEqual(['allowed', 'allowed', 'denied', 'denied', 'denied']);
    expect(verdicts[2]).toMatchObject({ guard: 'gen', category: 'Generation (per IP)' });
    // gen ran out after 2; per-ip (3) was charged only by the 2 allowed requests: one left for another rule.
    expect((await limit(req('/x')))!.decision).toBe('allowed');
    expect((await limit(req('/x')))!).toMatchObject({ decision: 'denied', guard: 'per-ip', category: 'Per client IP' });
  });

  it('a shadow rule’s own limits never deny, its guards do', async () => {
    const limit = step();
    const user = { 'x-user-id': 'same' };
    expect((await limit(req('/trial', user)))!.decision).toBe('allowed');
    // The rule's own bucket is out: shadow-denied, forwarded, nothing taken (the guard still has 2).
    expect((await limit(req('/trial', user)))!).toMatchObject({ decision: 'shadow-denied', guard: null });
    expect((await limit(req('/trial', { 'x-user-id': 'a' })))!.decision).toBe('allowed');
    expect((await limit(req('/trial', { 'x-user-id': 'b' })))!.decision).toBe('allowed');
    expect((await limit(req('/trial', { 'x-user-id': 'c' })))!).toMatchObject({ decision: 'denied', guard: 'per-ip' });
  });
});
