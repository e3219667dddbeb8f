import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';
import {
  client,
  deploymentBody,
  imageBody,
  makeRepo,
  startControlPlane,
  waitForRevision,
  type TestControlPlane,
  type TestRepo,
} from './helpers.ts';

/**
 * Every endpoint, on both path forms (`/v2` and `/api-host/v2`), against the
 * service on its own port and through the edge (the shipped US rules, each
 * test with keys of its own).
 */

let repo: TestRepo;
let svc: TestControlPlane;
let gw: TestGateway;

beforeAll(async () => {
  repo = makeRepo();
  repo.git('tag', 'v1');
  svc = await startControlPlane();
  gw = await startTestGateway({ CONTROL_PLANE_URL: svc.url, LOG_LEVEL: 'info' });
});

afterAll(async () => {
  await gw?.close();
  await svc?.close();
  repo?.remove();
});

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const targets = [
  { via: 'service', prefix: '/v2', base: () => svc.url },
  { via: 'service', prefix: '/api-host/v2', base: () => svc.url },
  { via: 'edge', prefix: '/v2', base: () => gw.url },
  { via: 'edge', prefix: '/api-host/v2', base: () => gw.url },
] as const;

describe.each(targets)('$via $prefix', ({ via, prefix, base }) => {
  const setup = async () => {
    const tenant = await svc.tenant();
    return { tenant, api: client(base(), tenant, prefix) };
  };

  it('POST /deployments: 201 with the whole record; its first revision is latest_revision_id', async () => {
    const { tenant, api } = await setup();
    // A source that fails at once: this test is about the answer, not the build.
    const body = deploymentBody('/nonexistent/repo', { secrets: [{ name: 'OPENAI_API_KEY', value: 'sk-test-value' }] });
    const res = await api.post('/deployments', body);
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const d = res.json;
    expect(d).toEqual({
      id: expect.stringMatching(UUID),
      name: body.name,
      tenant_id: tenant.workspace,
      region: 'us',
      source: 'github',
      source_config: body.source_config,
      source_revision_config: body.source_revision_config,
      secrets: [{ name: 'OPENAI_API_KEY' }],
      created_at: expect.stringMatching(ISO),
      updated_at: d.created_at,
      status: 'AWAITING_DATABASE',
      latest_revision_id: expect.stringMatching(UUID),
      active_revision_id: null,
      image_version: null,
      url: null,
    });
    const revisions = await api.get(`/deployments/${d.id}/revisions`);
    expect(revisions.json.resources.map((r: { id: string }) => r.id)).toEqual([d.latest_revision_id]);
    // Through the edge: the default rule's policy, then the shipped per-IP guard's.
    if (via === 'edge')
      expect(res.headers.get('ratelimit-policy')).toBe('"default.api-key";q=1000;w=10, "guard.per-ip";q=20000;w=10');
    else expect(res.headers.get('ratelimit-policy')).toBeNull();
  });

  it('GET /deployments/{id}: 200 with the record, which becomes READY once its revision is DEPLOYED', async () => {
    const { api } = await setup();
    const created = (await api.post('/deployments', imageBody())).json;
    const rev = await waitForRevision(api, created.id, created.latest_revision_id);
    expect(rev.status).toBe('DEPLOYED');
    const res = await api.get(`/deployments/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      id: created.id,
      name: created.name,
      status: 'READY',
      active_revision_id: created.latest_revision_id,
    });
    expect(res.json.image_version).toBe('docker.io/acme/agent:1');
    expect(Date.parse(res.json.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
  });

  it('GET /deployments: {resources, offset}, newest first, filters, limit and offset', async () => {
    const { api } = await setup();
    const a = (await api.post('/deployments', imageBody({ name: 'alpha-one' }))).json;
    const b = (await api.post('/deployments', imageBody({ name: 'beta' }))).json;
    const c = (
      await api.post('/deployments', imageBody({ name: 'alpha-prod', source_config: { deployment_type: 'prod' } }))
    ).json;
    const ids = (r: { json: { resources: { id: string }[] } }) => r.json.resources.map((d) => d.id);

    const all = await api.get('/deployments');
    expect(all.status).toBe(200);
    expect(all.json).toEqual({ resources: expect.any(Array), offset: 3 });
    expect(ids(all)).toEqual([c.id, b.id, a.id]);
    expect(all.json.resources[0]).toMatchObject({ name: 'alpha-prod', secrets: [] });

    const page1 = await api.get('/deployments?limit=2');
    expect(ids(page1)).toEqual([c.id, b.id]);
    expect(page1.json.offset).toBe(2);
    const page2 = await api.get(`/deployments?limit=2&offset=${page1.json.offset}`);
    expect(ids(page2)).toEqual([a.id]);
    expect(page2.json.offset).toBe(3);
    expect(ids(await api.get('/deployments?offset=3'))).toEqual([]);

    expect(ids(await api.get('/deployments?name_contains=ALPHA'))).toEqual([c.id, a.id]);
    expect(ids(await api.get('/deployments?deployment_type=prod'))).toEqual([c.id]);
    expect(ids(await api.get('/deployments?deployment_type=dev,prod'))).toEqual([c.id, b.id, a.id]);
    expect(ids(await api.get(`/deployments?deployment_ids=${a.id},${b.id}`))).toEqual([b.id, a.id]);
    expect(ids(await api.get(`/deployments?deployment_ids=${a.id}&deployment_ids=${c.id}`))).toEqual([c.id, a.id]);
    expect(ids(await api.get('/deployments?status=AWAITING_DELETE'))).toEqual([]);
    await waitForRevision(api, a.id, a.latest_revision_id);
    expect(ids(await api.get('/deployments?status=READY&name_contains=one'))).toEqual([a.id]);
  });

  it('PATCH /deployments/{id}: 200 with the whole record', async () => {
    const { api } = await setup();
    const created = (await api.post('/deployments', imageBody())).json;
    await waitForRevision(api, created.id, created.latest_revision_id);
    const before = (await api.get(`/deployments/${created.id}`)).json;
    const res = await api.patch(`/deployments/${created.id}`, { source_config: { build_on_push: true } });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      ...before,
      source_config: { ...before.source_config, build_on_push: true },
      updated_at: expect.stringMatching(ISO),
    });
    expect(await api.get(`/deployments/${created.id}`)).toMatchObject({ status: 200, json: res.json });
  });

  it('GET /deployments/{id}/revisions: newest first, status filter, paging', async () => {
    const { api } = await setup();
    const created = (
      await api.post(
        '/deployments',
        deploymentBody(repo.url, { source_revision_config: { repo_ref: 'no-such-branch' } }),
      )
    ).json;
    await waitForRevision(api, created.id, created.latest_revision_id);
    const patched = (await api.patch(`/deployments/${created.id}`, { source_revision_config: { repo_ref: 'v1' } }))
      .json;
    await waitForRevision(api, created.id, patched.latest_revision_id);

    const list = await api.get(`/deployments/${created.id}/revisions`);
    expect(list.status).toBe(200);
    expect(list.json.offset).toBe(2);
    expect(list.json.resources.map((r: { id: string }) => r.id)).toEqual([
      patched.latest_revision_id,
      created.latest_revision_id,
    ]);
    expect(list.json.resources.map((r: { status: string }) => r.status)).toEqual(['DEPLOYED', 'BUILD_FAILED']);
    const failed = await api.get(`/deployments/${created.id}/revisions?status=BUILD_FAILED`);
    expect(failed.json.resources.map((r: { id: string }) => r.id)).toEqual([created.latest_revision_id]);
    const both = await api.get(`/deployments/${created.id}/revisions?status=BUILD_FAILED,DEPLOYED&limit=1&offset=1`);
    expect(both.json).toMatchObject({ resources: [{ id: created.latest_revision_id }], offset: 2 });
  });

  it('GET /deployments/{id}/revisions/{revision_id}: 200 with status, source config and commit', async () => {
    const { api } = await setup();
    const created = (
      await api.post(
        '/deployments',
        deploymentBody(repo.url, {
          source_revision_config: { repo_ref: 'v1', langgraph_config_path: 'langgraph.json', image_uri: null },
        }),
      )
    ).json;
    const res = await api.get(`/deployments/${created.id}/revisions/${created.latest_revision_id}`);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      id: created.latest_revision_id,
      deployment_id: created.id,
      source: 'github',
      region: 'us',
      created_at: expect.stringMatching(ISO),
    });
    expect(typeof res.json.status).toBe('string');
    const done = await waitForRevision(api, created.id, created.latest_revision_id);
    expect(done.source_revision_config).toEqual({
      repo_ref: 'v1',
      langgraph_config_path: 'langgraph.json',
      image_uri: null,
      repo_commit_sha: repo.git('rev-parse', 'v1'),
    });
  });

  it('DELETE /deployments/{id}: 204 without a body; afterwards the deployment and its revisions answer 404', async () => {
    const { api } = await setup();
    const created = (await api.post('/deployments', imageBody())).json;
    const res = await api.delete(`/deployments/${created.id}`);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    const gone = { detail: `Deployment ID ${created.id} not found.` };
    expect(await api.get(`/deployments/${created.id}`)).toMatchObject({ status: 404, json: gone });
    expect(await api.get(`/deployments/${created.id}/revisions`)).toMatchObject({ status: 404, json: gone });
    expect(await api.get(`/deployments/${created.id}/revisions/${created.latest_revision_id}`)).toMatchObject({
      status: 404,
      json: gone,
    });
    expect(await api.delete(`/deployments/${created.id}`)).toMatchObject({ status: 404, json: gone });
    expect((await api.get('/deployments')).json.resources).toEqual([]);
  });

  it('an image source deploys without a repository', async () => {
    const { api } = await setup();
    const res = await api.post('/deployments', {
      name: 'image-app',
      source: 'external_docker',
      source_config: { deployment_type: 'prod' },
      source_revision_config: { image_uri: 'docker.io/acme/agent:1.2' },
    });
    expect(res.status).toBe(201);
    expect(res.json.source_config).toMatchObject({ repo_url: null, deployment_type: 'prod', build_on_push: false });
    const rev = await waitForRevision(api, res.json.id, res.json.latest_revision_id);
    expect(rev).toMatchObject({
      status: 'DEPLOYED',
      source_revision_config: { image_uri: 'docker.io/acme/agent:1.2', repo_commit_sha: null },
    });
    expect((await api.get(`/deployments/${res.json.id}`)).json.image_version).toBe('docker.io/acme/agent:1.2');
  });
});

describe('the same API on both path forms', () => {
  it('a deployment created under /v2 is the same resource under /api-host/v2, through the edge', async () => {
    const tenant = await svc.tenant();
    const v2 = client(gw.url, tenant, '/v2');
    const hosted = client(gw.url, tenant, '/api-host/v2');
    const created = (await v2.post('/deployments', imageBody())).json;
    expect((await hosted.get(`/deployments/${created.id}`)).json).toEqual(
      (await v2.get(`/deployments/${created.id}`)).json,
    );
    expect((await hosted.delete(`/deployments/${created.id}`)).status).toBe(204);
    expect((await v2.get(`/deployments/${created.id}`)).status).toBe(404);
  });

  it('the edge logs each forwarded request to the control plane upstream', async () => {
    const tenant = await svc.tenant();
    const res = await fetch(`${gw.url}/api-host/v2/deployments`, {
      headers: { 'x-api-key': tenant.key, 'x-tenant-id': tenant.workspace, 'x-request-id': 'cp-api-log-1' },
    });
    expect(res.status).toBe(200);
    const line = await gw.logs.requestLine('cp-api-log-1');
    expect(line).toMatchObject({
      path: '/api-host/v2/deployments',
      status: 200,
      upstream: 'control-plane',
      rule: 'default',
    });
  });
});
