import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteByPrefix } from '../../helpers/redis-keys.ts';
import { SHARED_REDIS_URL, sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';
import {
  client,
  deploymentBody,
  eventually,
  makeRepo,
  startControlPlane,
  type TestRepo,
} from '../control-plane/helpers.ts';
import { alive, ask, BARE_APP, deployed } from './helpers.ts';

/**
 * The hosting gateway that loses its lease (leases/hosting.ts): here another holder's token is written over its key,
 * as when it could not renew and another gateway took it. It stands down (its deployment's route `starting`, its
 * process stopped), and when the lease is free again it takes it and serves
 * the deployment again. The shared Redis under prefixes of this test, removed afterwards.
 */
const RUN = uniquePrefix('test:lease-lost');
const DATA = `test-lease-lost-${randomUUID().slice(0, 8)}`;
const redis = sharedRedis();
let repo: TestRepo;

beforeAll(() => {
  repo = makeRepo(BARE_APP);
});

afterAll(async () => {
  repo?.remove();
  await deleteByPrefix(redis, RUN);
  await deleteByPrefix(redis, DATA);
  await redis.quit();
});

describe('a hosting gateway that loses its lease', () => {
  it('stands down (route starting, process stopped), then serves again when it gets the lease back', async () => {
    const t = await startControlPlane(
      {
        REDIS_URL: SHARED_REDIS_URL,
        CONTROL_PLANE_PREFIX: `${RUN}:cp`,
        API_KEYS_PREFIX: `${RUN}:keys`,
        DEPLOYMENT_DATA_PREFIX: DATA,
        ROUTES_PREFIX: `${RUN}:routes`,
        TRUST_ALL_TENANTS: '1',
        HOSTING_LEASE_SECONDS: '1',
      },
      { host: undefined },
    );
    try {
      const tenant = await t.tenant();
      const api = client(t.url, tenant);
      const d = (await api.post('/deployments', deploymentBody(repo.url))).json;
      await deployed(api, d.id, d.latest_revision_id);
      const pid = t.cp.serving!.current(d.id)!.proc!.pid;
      const key = `${RUN}:cp:us:lease:hosting`;

      await redis.set(key, 'another-gateway', 'PX', 3000);
      await eventually(() => t.cp.routes.get(d.id)?.unavailable === 'starting', 5000, 'its route starting');
      await eventually(() => !alive(pid), 5000, 'its process stopped');
      expect(t.cp.serving!.current(d.id)).toBeUndefined();

      // The other holder's key lapses: this gateway takes the lease and serves the deployment again.
      const route = await eventually(() => (t.cp.routes.get(d.id)?.unavailable ? null : t.cp.routes.get(d.id)), 30_000);
      expect(await ask(route.target, tenant)).toMatch(/^v1/);
      expect((await api.get(`/deployments/${d.id}`)).json.status).toBe('READY');
    } finally {
      await t.close();
    }
  }, 90_000);
});
