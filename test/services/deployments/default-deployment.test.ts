import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ORG, DEFAULT_WORKSPACE } from '../../../src/keys/bootstrap.ts';
import { RedisKeyRegistry } from '../../../src/keys/redis-registry.ts';
import { startTestGateway } from '../../helpers/gateway.ts';
import { deleteByPrefix } from '../../helpers/redis-keys.ts';
import { SHARED_REDIS_URL, sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';

/**
 * The default deployment (the example app the gateway serves at every bare path) is listed by the control plane with
 * a `url`, reachable there and at the bare paths alike, refused to patch or delete, and the same record after a
 * restart (its route then points at the new start's server).
 */
const RUN = uniquePrefix('test:default-deployment');
const redis = sharedRedis();
const env = {
  REDIS_URL: SHARED_REDIS_URL,
  KEY_PREFIX: `t${randomBytes(6).toString('hex')}`,
  CONTROL_PLANE_PREFIX: `${RUN}:cp`,
  API_KEYS_PREFIX: `${RUN}:keys`,
  ROUTES_PREFIX: `${RUN}:routes`,
  AGENT_STORE_PREFIX: `${RUN}:agent`,
  NODE_ENV: 'test',
  LOG_LEVEL: 'warn',
};
let key = '';

beforeAll(async () => {
  const keys = new RedisKeyRegistry(redis, { prefix: `${RUN}:keys` });
  await keys.addWorkspace(DEFAULT_ORG, DEFAULT_WORKSPACE);
  key = (await keys.createKey(DEFAULT_ORG)).key;
});

afterAll(async () => {
  await deleteByPrefix(redis, RUN);
  await redis.quit();
});

const api = (base: string, path: string, init: RequestInit = {}) =>
  fetch(`${base}/v2${path}`, {
    ...init,
    headers: { 'x-api-key': key, 'x-tenant-id': DEFAULT_WORKSPACE, 'content-type': 'application/json' },
  });

async function defaultDeployments(base: string) {
  const listed = (await (await api(base, '/deployments')).json()) as { resources: Record<string, unknown>[] };
  return listed.resources.filter((d) => d.name === 'default');
}

describe('the default deployment', () => {
  it('is listed with a url that reaches the app the bare paths reach; it cannot be patched or deleted; a restart keeps it', async () => {
    let id: string;
    const first = await startTestGateway(env);
    try {
      const [d, ...more] = await defaultDeployments(first.url);
      expect(more).toEqual([]);
      expect(d).toMatchObject({
        status: 'READY',
        bundled: true,
        url: `http://localhost:${first.port}/deployments/${d!.id}`,
      });
      id = d!.id as string;
      const atUrl = await fetch(`${first.url}/deployments/${id}/info`);
      const bare = await fetch(`${first.url}/info`);
      expect([atUrl.status, bare.status]).toEqual([200, 200]);
      expect(await atUrl.json()).toEqual(await bare.json());
      const revision = (await (
        await api(first.url, `/deployments/${id}/revisions/${d!.active_revision_id}`)
      ).json()) as {
        status: string;
      };
      expect(revision.status).toBe('DEPLOYED');

      const patched = await api(first.url, `/deployments/${id}`, {
        method: 'PATCH',
        body: JSON.stringify({ source_revision_config: { repo_ref: 'main' } }),
      });
      expect(patched.status).toBe(409);
      expect(((await patched.json()) as { detail: string }).detail).toMatch(/default deployment.*cannot be patched/);
      expect((await api(first.url, `/deployments/${id}`, { method: 'DELETE' })).status).toBe(409);
      expect(first.gateway.routes.get(id)?.target).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(await redis.hget(`${RUN}:routes:us:{routes}:table`, id)).not.toBeNull();
    } finally {
      await first.close();
    }
    // Its route went with the server that served it (other edges on the table answer 404, not 502, meanwhile).
    expect(await redis.hget(`${RUN}:routes:us:{routes}:table`, id)).toBeNull();

    const second = await startTestGateway(env);
    try {
      const again = await defaultDeployments(second.url);
      expect(again.map((d) => d.id)).toEqual([id]);
      expect((await fetch(`${second.url}/deployments/${id}/info`)).status).toBe(200);
    } finally {
      await second.close();
    }
  });
});
