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
 * PATCH semantics through the edge (both path forms): `source_config` may be
 * partial and creates no revision; `source_revision_config` with a non-null
 * `repo_ref` or `image_uri` creates one, which becomes `latest_revision_id`
 * and element 0 of the revision list.
 */

let repo: TestRepo;
let svc: TestControlPlane;
let gw: TestGateway;

beforeAll(async () => {
  repo = makeRepo();
  repo.git('branch', 'release');
  svc = await startControlPlane();
  gw = await startTestGateway({ CONTROL_PLANE_URL: svc.url });
});

afterAll(async () => {
  await gw?.close();
  await svc?.close();
  repo?.remove();
});

const revisionIds = async (api: ReturnType<typeof client>, id: string): Promise<string[]> =>
  (await api.get(`/deployments/${id}/revisions`)).json.resources.map((r: { id: string }) => r.id);

describe.each(['/v2', '/api-host/v2'])('PATCH through the edge, %s', (prefix) => {
  const setup = async () => client(gw.url, await svc.tenant(), prefix);

  it('a partial source_config changes only the given fields and creates no revision', async () => {
    const api = await setup();
    const d = (await api.post('/deployments', deploymentBody(repo.url))).json;
    const res = await api.patch(`/deployments/${d.id}`, {
      source_config: { build_on_push: true, custom_url: 'https://agents.example.com' },
    });
    expect(res.status).toBe(200);
    expect(res.json.source_config).toEqual({
      ...d.source_config,
      build_on_push: true,
      custom_url: 'https://agents.example.com',
    });
    expect(res.json.source_revision_config).toEqual(d.source_revision_config);
    expect(res.json.latest_revision_id).toBe(d.latest_revision_id);
    expect(await revisionIds(api, d.id)).toEqual([d.latest_revision_id]);
    // null is a value: it clears a nullable field
    const cleared = await api.patch(`/deployments/${d.id}`, { source_config: { custom_url: null } });
    expect(cleared.json.source_config).toEqual({ ...d.source_config, build_on_push: true });
  });

  it('source_revision_config with a repo_ref creates a revision: the new latest_revision_id and element 0', async () => {
    const api = await setup();
    const d = (await api.post('/deployments', deploymentBody(repo.url))).json;
    await waitForRevision(api, d.id, d.latest_revision_id);
    const res = await api.patch(`/deployments/${d.id}`, { source_revision_config: { repo_ref: 'release' } });
    expect(res.status).toBe(200);
    const latest = res.json.latest_revision_id;
    expect(latest).not.toBe(d.latest_revision_id);
    expect(res.json.source_revision_config).toEqual({ ...d.source_revision_config, repo_ref: 'release' });
    expect(await revisionIds(api, d.id)).toEqual([latest, d.latest_revision_id]);
    expect((await api.get(`/deployments/${d.id}`)).json.latest_revision_id).toBe(latest);
    const rev = await waitForRevision(api, d.id, latest);
    expect(rev).toMatchObject({
      status: 'DEPLOYED',
      source_revision_config: {
        repo_ref: 'release',
        langgraph_config_path: 'langgraph.json',
        repo_commit_sha: repo.git('rev-parse', 'release'),
      },
    });
    expect((await api.get(`/deployments/${d.id}`)).json.active_revision_id).toBe(latest);
    // The same ref again still builds again: every such patch is a revision.
    const again = await api.patch(`/deployments/${d.id}`, { source_revision_config: { repo_ref: 'release' } });
    expect(await revisionIds(api, d.id)).toEqual([again.json.latest_revision_id, latest, d.latest_revision_id]);
  });

  it('source_revision_config with an image_uri creates a revision', async () => {
    const api = await setup();
    const d = (await api.post('/deployments', imageBody())).json;
    await waitForRevision(api, d.id, d.latest_revision_id);
    const res = await api.patch(`/deployments/${d.id}`, {
      source_revision_config: { image_uri: 'docker.io/acme/agent:2' },
    });
    expect(res.json.latest_revision_id).not.toBe(d.latest_revision_id);
    const rev = await waitForRevision(api, d.id, res.json.latest_revision_id);
    expect(rev.source_revision_config.image_uri).toBe('docker.io/acme/agent:2');
    expect((await api.get(`/deployments/${d.id}`)).json).toMatchObject({
      image_version: 'docker.io/acme/agent:2',
      active_revision_id: rev.id,
    });
  });

  it('source_revision_config without a non-null repo_ref or image_uri changes the config but creates no revision', async () => {
    const api = await setup();
    const d = (await api.post('/deployments', deploymentBody(repo.url))).json;
    const res = await api.patch(`/deployments/${d.id}`, {
      source_revision_config: { langgraph_config_path: 'apps/langgraph.json', repo_ref: null, image_uri: null },
    });
    expect(res.status).toBe(200);
    expect(res.json.source_revision_config).toEqual({
      repo_ref: 'main',
      langgraph_config_path: 'apps/langgraph.json',
      image_uri: null,
    });
    expect(res.json.latest_revision_id).toBe(d.latest_revision_id);
    const none = await api.patch(`/deployments/${d.id}`, { source_revision_config: null });
    expect(none.json.latest_revision_id).toBe(d.latest_revision_id);
    expect(await revisionIds(api, d.id)).toEqual([d.latest_revision_id]);
  });

  it('a body with both creates one revision and applies both', async () => {
    const api = await setup();
    const d = (await api.post('/deployments', deploymentBody(repo.url))).json;
    const res = await api.patch(`/deployments/${d.id}`, {
      source_config: { deployment_type: 'prod' },
      source_revision_config: { repo_ref: 'release' },
    });
    expect(res.json.source_config.deployment_type).toBe('prod');
    expect(await revisionIds(api, d.id)).toEqual([res.json.latest_revision_id, d.latest_revision_id]);
    expect(
      (await api.get(`/deployments?deployment_type=prod`)).json.resources.map((x: { id: string }) => x.id),
    ).toEqual([d.id]);
  });

  it('an empty patch changes nothing', async () => {
    const api = await setup();
    const d = (await api.post('/deployments', imageBody())).json;
    await waitForRevision(api, d.id, d.latest_revision_id);
    const before = (await api.get(`/deployments/${d.id}`)).json;
    const res = await api.patch(`/deployments/${d.id}`, {});
    expect(res.status).toBe(200);
    expect(res.json).toEqual(before);
  });

  it('secrets in a patch replace the list (names only in the answer)', async () => {
    const api = await setup();
    const d = (
      await api.post(
        '/deployments',
        imageBody({
          secrets: [
            { name: 'A', value: '1' },
            { name: 'B', value: '2' },
          ],
        }),
      )
    ).json;
    expect(d.secrets).toEqual([{ name: 'A' }, { name: 'B' }]);
    const res = await api.patch(`/deployments/${d.id}`, { secrets: [{ name: 'C', value: '3' }] });
    expect(res.json.secrets).toEqual([{ name: 'C' }]);
    expect(res.json.latest_revision_id).toBe(d.latest_revision_id);
    expect(await svc.cp.service.secretValues(res.json.tenant_id, d.id)).toEqual({ C: '3' });
  });
});
