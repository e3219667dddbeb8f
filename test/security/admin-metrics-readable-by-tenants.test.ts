import { describe, expect, it } from 'vitest';
import { adminApp } from '../../src/admin/app.ts';
import { startTestGateway } from '../helpers/gateway.ts';

/**
 * Finding "internal listeners reachable directly" (issue 25, attack 6), the admin part: /metrics on the admin listener
 * counts every tenant's traffic, and a deployment's process on the same loopback could read it. With an operator
 * token, /metrics answers only that token; the probes (/healthz, /readyz) stay open and tell nothing of any tenant.
 */
const ready = () => ({ rules: 'v1', store: 'ok' as const, draining: false });
const metrics = { metrics: async () => 'gateway_requests_total 1\n', contentType: 'text/plain' };

describe('the admin listener with an operator token', () => {
  const app = adminApp({ ready, metrics, token: 'op-secret' });

  it('refuses /metrics without the token: 401 {detail}', async () => {
    for (const headers of [{}, { authorization: 'Bearer nope' }, { authorization: 'op-secret' }] as Record<
      string,
      string
    >[]) {
      const res = await app.request('/metrics', { headers });
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ detail: expect.stringMatching(/operator token/) });
    }
  });

  it('answers /metrics with it, and the probes without it', async () => {
    const res = await app.request('/metrics', { headers: { authorization: 'Bearer op-secret' } });
    expect(await res.text()).toContain('gateway_requests_total');
    expect((await app.request('/healthz')).status).toBe(200);
    expect((await app.request('/readyz')).status).toBe(200);
  });
});

describe('ADMIN_TOKEN', () => {
  it("puts the running gateway's /metrics behind the token, and leaves it open when unset", async () => {
    const guarded = await startTestGateway({ ADMIN_TOKEN: 'op-secret' });
    const open = await startTestGateway();
    try {
      const metricsOf = (port: number, headers: Record<string, string> = {}) =>
        fetch(`http://127.0.0.1:${port}/metrics`, { headers });
      expect((await metricsOf(guarded.gateway.admin.port)).status).toBe(401);
      const withToken = await metricsOf(guarded.gateway.admin.port, { authorization: 'Bearer op-secret' });
      expect(await withToken.text()).toContain('gateway_requests_total');
      expect((await fetch(`http://127.0.0.1:${guarded.gateway.admin.port}/readyz`)).status).toBe(200);
      expect((await metricsOf(open.gateway.admin.port)).status).toBe(200);
    } finally {
      await Promise.all([guarded.close(), open.close()]);
    }
  });
});
