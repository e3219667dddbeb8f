import { afterAll, describe, expect, it } from 'vitest';
import { deleteByPrefix } from '../../helpers/redis-keys.ts';
import { SHARED_REDIS_URL, sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';
import { client, imageBody, startControlPlane, type TestControlPlane } from './helpers.ts';

/**
 * MAX_DEPLOYMENTS_PER_TENANT through the API: one more deployment than the limit answers 409 in the `{"detail"}`
 * shape and creates nothing; a delete frees the slot; concurrent creates at the limit (on one instance, and on two
 * instances sharing one Redis) never both pass.
 */
const RUN = uniquePrefix('test:cp-quota');
const redis = sharedRedis();

afterAll(async () => {
  await deleteByPrefix(redis, RUN);
  await redis.quit();
});

const QUOTA_DETAIL = /^Quota exceeded \(deployments_per_tenant\): .*MAX_DEPLOYMENTS_PER_TENANT/;

const backends = [
  { name: 'memory', env: (_label: string): Record<string, string> => ({}) },
  {
    name: 'redis',
    env: (label: string): Record<string, string> => ({
      REDIS_URL: SHARED_REDIS_URL,
      CONTROL_PLANE_PREFIX: `${RUN}:${label}`,
      API_KEYS_PREFIX: `${RUN}:${label}:keys`,
    }),
  },
] as const;

describe.each(backends)('deployments per tenant ($name)', ({ name, env }) => {
  it('the one past MAX_DEPLOYMENTS_PER_TENANT answers 409 and creates nothing; a delete frees the slot', async () => {
    const svc = await startControlPlane({ ...env(`${name}-limit`), MAX_DEPLOYMENTS_PER_TENANT: '3' });
    try {
      const tenant = await svc.tenant();
      const api = client(svc.url, tenant);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await api.post('/deployments', imageBody());
        expect(res.status).toBe(201);
        ids.push(res.json.id);
      }
      const refused = await api.post('/deployments', imageBody({ name: 'one-too-many' }));
      expect(refused.status).toBe(409);
      expect(Object.keys(refused.json)).toEqual(['detail']);
      expect(refused.json.detail).toMatch(QUOTA_DETAIL);
      expect(refused.json.detail).toContain('3 deployments');
      const listed = await api.get('/deployments?limit=100');
      expect(listed.json.resources.map((d: { id: string }) => d.id).sort()).toEqual([...ids].sort());
      expect(listed.json.resources.some((d: { name: string }) => d.name === 'one-too-many')).toBe(false);

      // Another tenant has slots of its own.
      const other = client(svc.url, await svc.tenant('other'));
      expect((await other.post('/deployments', imageBody())).status).toBe(201);

      expect((await api.delete(`/deployments/${ids[0]}`)).status).toBe(204);
      expect((await api.post('/deployments', imageBody())).status).toBe(201);
      expect((await api.post('/deployments', imageBody())).status).toBe(409);
    } finally {
      await svc.close();
    }
  });

  it('concurrent creates at the limit: exactly MAX_DEPLOYMENTS_PER_TENANT succeed', async () => {
    const shared = env(`${name}-race`);
    const a = await startControlPlane({ ...shared, MAX_DEPLOYMENTS_PER_TENANT: '3' });
    // On Redis a second instance on the same keys: the limit holds across processes, not only within one.
    const b: TestControlPlane =
      name === 'redis' ? await startControlPlane({ ...shared, MAX_DEPLOYMENTS_PER_TENANT: '3' }) : a;
    try {
      const tenant = await a.tenant();
      const apis = [client(a.url, tenant), client(b.url, tenant)];
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) => apis[i % 2]!.post('/deployments', imageBody())),
      );
      expect(answers.map((r) => r.status).sort()).toEqual([201, 201, 201, 409, 409, 409, 409, 409, 409, 409]);
      expect((await apis[0]!.get('/deployments?limit=100')).json.resources).toHaveLength(3);
    } finally {
      if (b !== a) await b.close();
      await a.close();
    }
  });
});
