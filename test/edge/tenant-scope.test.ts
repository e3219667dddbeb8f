import { describe, expect, it } from 'vitest';
import { countedIdentity, tenantOf } from '../../src/edge/tenant-scope.ts';
import type { Destination } from '../../src/routing/router.ts';
import type { Limit } from '../../src/rules/types.ts';

const limit = (by: Limit['by'], until: Limit['until']): Limit => ({
  by,
  count: 10,
  perSeconds: 10,
  until,
  category: 'c',
  policy: 'p',
  scope: 'p',
  guard: null,
});
const request = (tenant: string) => ({ headers: { 'x-user-id': 'alice', 'x-api-key': 'k' }, ip: '10.0.0.1', tenant });

describe('what a count is scoped to', () => {
  it("user ids and an address's run slots are counted per deployment; keys and the per-IP rate are not", () => {
    const [a, b] = [request('dep-a'), request('dep-b')];
    for (const l of [limit('user-ip', null), limit('user-ip', 'run'), limit('ip', 'run')])
      expect(countedIdentity(a, l), l.by).not.toBe(countedIdentity(b, l));
    for (const l of [limit('api-key', 'run'), limit('api-key', null), limit('ip', null)])
      expect(countedIdentity(a, l), l.by).toBe(countedIdentity(b, l));
    // The gateway's own services and default deployment: the identity as it always was.
    expect(countedIdentity(request(''), limit('user-ip', null))).toBe('alice\u000010.0.0.1');
  });

  it('the default deployment counts the same at the bare paths and at /deployments/{id}', () => {
    const named = { kind: 'deployment', deploymentId: 'own' } as unknown as Destination;
    const other = { kind: 'deployment', deploymentId: 'theirs' } as unknown as Destination;
    const service = { kind: 'service' } as unknown as Destination;
    expect(tenantOf(named, 'own')).toBe('');
    expect(tenantOf(service, 'own')).toBe('');
    expect(tenantOf(other, 'own')).toBe('theirs');
  });
});
