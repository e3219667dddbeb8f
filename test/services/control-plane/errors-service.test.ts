import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis } from '../../../support/redis-server.ts';
import { expectError } from './error-checks.ts';
import { client, imageBody, startControlPlane, type TestControlPlane } from './helpers.ts';

/**
 * Errors of the control plane service itself (413, 500, 503), on the service
 * only; every error body is JSON, never a stack.
 */

let svc: TestControlPlane;

beforeAll(async () => {
  svc = await startControlPlane();
});

afterAll(async () => {
  await svc?.close();
});

describe('errors of the service itself', () => {
  it('413 for a body over the service limit', async () => {
    const api = client(svc.url, await svc.tenant());
    const res = await api.post('/deployments', imageBody({ name: 'x'.repeat(2 * 1024 * 1024) }));
    expectError(res, 413, 'Request body larger than 1048576 bytes.');
  });

  it('500 is JSON without a stack; the stack goes to the log only', async () => {
    const broken = await startControlPlane();
    try {
      broken.cp.store.listDeployments = async () => {
        throw new TypeError('boom in /internal/path.ts');
      };
      const res = await client(broken.url, await broken.tenant()).get('/deployments');
      expectError(res, 500, 'Internal server error.');
      expect(res.text).not.toContain('boom');
      const line = await broken.logs.waitFor((l) => l.msg === 'control plane failure');
      expect(JSON.stringify(line)).toContain('boom in /internal/path.ts');
    } finally {
      await broken.close();
    }
  });

  it('503 when the Redis store is down, quickly', async () => {
    const redis = await startRedis();
    const svcR = await startControlPlane({ REDIS_URL: redis.url });
    try {
      const api = client(svcR.url, await svcR.tenant());
      expect((await api.get('/deployments')).status).toBe(200);
      await redis.stop();
      const started = Date.now();
      const res = await api.get('/deployments');
      expectError(res, 503, 'Store unavailable; retry later.');
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      await svcR.close();
      await redis.stop();
    }
  });
});
