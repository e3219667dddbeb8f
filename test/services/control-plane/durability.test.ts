import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway } from '../../helpers/gateway.ts';
import { deleteByPrefix, keysByPrefix } from '../../helpers/redis-keys.ts';
import {
  client,
  deploymentBody,
  imageBody,
  makeRepo,
  startControlPlane,
  waitForRevision,
  type TestRepo,
} from './helpers.ts';
import { SHARED_REDIS_URL, sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';

/**
 * With Redis, nothing is lost on a restart: a new process reads every
 * deployment and revision back (through the edge), queued revisions are
 * built, and a build caught mid-way is INTERRUPTED rather than left
 * BUILDING. Two regions on one Redis never see each other's records.
 * The shared Redis is used under a unique prefix, removed afterwards.
 */

const RUN = uniquePrefix('test:cp-durable');
const redis = sharedRedis();
let repo: TestRepo;

beforeAll(() => {
  repo = makeRepo();
});

afterAll(async () => {
  repo?.remove();
  await deleteByPrefix(redis, RUN);
  await redis.quit();
});

const envFor = (name: string, extra: Record<string, string> = {}) => ({
  REDIS_URL: SHARED_REDIS_URL,
  CONTROL_PLANE_PREFIX: `${RUN}:${name}`,
  API_KEYS_PREFIX: `${RUN}:${name}:keys`,
  ...extra,
});

describe('restart on Redis', () => {
  it('a restarted service reads every deployment, revision, key and secret back, through the edge', async () => {
    const env = envFor('restart');
    const first = await startControlPlane(env);
    const tenant = await first.tenant();
    const api = client(first.url, tenant);
    const deployed = (
      await api.post('/deployments', deploymentBody(repo.url, { secrets: [{ name: 'TOKEN', value: 'kept' }] }))
    ).json;
    const failed = (
      await api.post('/deployments', deploymentBody(repo.url, { source_revision_config: { repo_ref: 'nope' } }))
    ).json;
    const image = (await api.post('/deployments', imageBody())).json;
    await waitForRevision(api, image.id, image.latest_revision_id);
    const image2 = (await api.patch(`/deployments/${image.id}`, { source_revision_config: { image_uri: 'x/y:2' } }))
      .json;
    for (const [id, rev] of [
      [deployed.id, deployed.latest_revision_id],
      [failed.id, failed.latest_revision_id],
      [image.id, image2.latest_revision_id],
    ]) {
      await waitForRevision(api, id, rev);
    }
    const snapshot = async (base: string, prefix: string) => {
      const c = client(base, tenant, prefix);
      const list = (await c.get('/deployments')).json;
      const out: unknown[] = [list];
      for (const d of list.resources) {
        out.push((await c.get(`/deployments/${d.id}`)).json, (await c.get(`/deployments/${d.id}/revisions`)).json);
        for (const r of (await c.get(`/deployments/${d.id}/revisions`)).json.resources)
          out.push((await c.get(`/deployments/${d.id}/revisions/${r.id}`)).json);
      }
      return out;
    };
    const before = await snapshot(first.url, '/v2');
    expect((before[0] as { resources: unknown[] }).resources).toHaveLength(3);
    await first.close();

    const second = await startControlPlane(env);
    const gw = await startTestGateway({ CONTROL_PLANE_URL: second.url });
    try {
      expect(await snapshot(gw.url, '/v2')).toEqual(before);
      expect(await snapshot(gw.url, '/api-host/v2')).toEqual(before);
      expect(await second.cp.service.secretValues(tenant.workspace, deployed.id)).toEqual({ TOKEN: 'kept' });
      expect(second.cp.devKey).toBeNull();
      const next = (
        await client(gw.url, tenant).patch(`/deployments/${deployed.id}`, {
          source_revision_config: { repo_ref: 'main' },
        })
      ).json;
      expect((await waitForRevision(client(gw.url, tenant), deployed.id, next.latest_revision_id)).status).toBe(
        'DEPLOYED',
      );
    } finally {
      await gw.close();
      await second.close();
    }
  });

  it('a build caught by the restart becomes INTERRUPTED; a queued one is built by the new process', async () => {
    const env = envFor('interrupt');
    const first = await startControlPlane({ ...env, BUILD_DELAY_SECONDS: '0.3', BUILD_CONCURRENCY: '1' });
    const tenant = await first.tenant();
    const api = client(first.url, tenant);
    const building = (await api.post('/deployments', deploymentBody(repo.url))).json;
    const queued = (await api.post('/deployments', imageBody())).json;
    await waitForRevision(api, building.id, building.latest_revision_id, (s) => s === 'BUILDING');
    await first.close(); // the run stops; the store still says BUILDING, as after a crash
    const raw = (dep: string, rev: string) =>
      redis.get(`${RUN}:interrupt:us:rev:${dep}:${rev}`).then((v) => JSON.parse(v!));
    expect((await raw(building.id, building.latest_revision_id)).status).toBe('BUILDING');
    expect((await raw(queued.id, queued.latest_revision_id)).status).toBe('QUEUED');

    const second = await startControlPlane(env);
    const gw = await startTestGateway({ CONTROL_PLANE_URL: second.url });
    try {
      const api2 = client(gw.url, tenant);
      const interrupted = (await api2.get(`/deployments/${building.id}/revisions/${building.latest_revision_id}`)).json;
      expect(interrupted.status).toBe('INTERRUPTED');
      expect(interrupted.status_message).toMatch(
        /^INTERRUPTED: the control plane restarted while the revision was BUILDING; patch the deployment/,
      );
      expect(interrupted.status_history.map((s: { status: string }) => s.status)).toEqual([
        'QUEUED',
        'AWAITING_BUILD',
        'BUILDING',
        'INTERRUPTED',
      ]);
      expect((await waitForRevision(api2, queued.id, queued.latest_revision_id)).status).toBe('DEPLOYED');
      expect(await second.logs.waitFor((l) => l.msg === 'recovered unfinished revisions')).toMatchObject({
        requeued: 1,
        interrupted: 1,
      });
    } finally {
      await gw.close();
      await second.close();
    }
  });
});

describe('regions on one Redis', () => {
  it('REGION=us and REGION=eu share keys but never serve each other’s deployments', async () => {
    const env = envFor('regions');
    const us = await startControlPlane({ ...env, REGION: 'us' });
    const eu = await startControlPlane({ ...env, REGION: 'eu' });
    const [gwUs, gwEu] = await Promise.all([
      startTestGateway({ REGION: 'us', CONTROL_PLANE_URL: us.url }),
      startTestGateway({ REGION: 'eu', CONTROL_PLANE_URL: eu.url }),
    ]);
    try {
      const tenant = await us.tenant(); // one registry: the key works in both regions
      const inUs = client(gwUs.url, tenant);
      const inEu = client(gwEu.url, tenant, '/api-host/v2');
      const a = (await inUs.post('/deployments', imageBody({ name: 'us-app' }))).json;
      const b = (await inEu.post('/deployments', imageBody({ name: 'eu-app' }))).json;
      expect(a.region).toBe('us');
      expect(b.region).toBe('eu');
      expect((await inUs.get(`/deployments/${a.id}/revisions/${a.latest_revision_id}`)).json.region).toBe('us');

      expect(await inEu.get(`/deployments/${a.id}`)).toMatchObject({
        status: 404,
        json: { detail: `Deployment ID ${a.id} not found.` },
      });
      expect((await inEu.get(`/deployments/${a.id}/revisions`)).status).toBe(404);
      expect((await inEu.delete(`/deployments/${a.id}`)).status).toBe(404);
      expect((await inUs.get(`/deployments/${b.id}`)).status).toBe(404);
      expect((await inUs.get('/deployments')).json.resources.map((d: { id: string }) => d.id)).toEqual([a.id]);
      expect((await inEu.get('/deployments')).json.resources.map((d: { id: string }) => d.id)).toEqual([b.id]);

      const keys = await keysByPrefix(redis, `${RUN}:regions:`);
      expect(keys.filter((k) => k.includes(a.id)).every((k) => k.startsWith(`${RUN}:regions:us:`))).toBe(true);
      expect(keys.filter((k) => k.includes(b.id)).every((k) => k.startsWith(`${RUN}:regions:eu:`))).toBe(true);
      expect(await inUs.get(`/deployments/${a.id}`)).toMatchObject({ status: 200 });
    } finally {
      await Promise.all([gwUs.close(), gwEu.close()]);
      await Promise.all([us.close(), eu.close()]);
    }
  });
});
