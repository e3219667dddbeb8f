import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';
import { errorTargets, expectError } from './error-checks.ts';
import { client, imageBody, startControlPlane, type TestControlPlane } from './helpers.ts';

/**
 * Access errors of the control plane (401, 400 without a tenant, 403, 404),
 * on both path forms, on the service and through the edge; every error body
 * is JSON, never a stack.
 */

let svc: TestControlPlane;
let gw: TestGateway;

beforeAll(async () => {
  svc = await startControlPlane();
  gw = await startTestGateway({ CONTROL_PLANE_URL: svc.url });
});

afterAll(async () => {
  await gw?.close();
  await svc?.close();
});

const targets = errorTargets(
  () => svc,
  () => gw,
);

describe.each(targets)('$via $prefix', ({ prefix, base }) => {
  it('401 without X-Api-Key, 401 with an unknown one', async () => {
    const tenant = await svc.tenant();
    const none = client(base(), null, prefix);
    expectError(
      await none.get('/deployments', { 'x-tenant-id': tenant.workspace }),
      401,
      'Missing X-Api-Key header: send a valid API key.',
    );
    expectError(await none.post('/deployments', imageBody(), { 'x-tenant-id': tenant.workspace }), 401);
    const wrong = client(base(), { key: `gwk_${'A'.repeat(43)}`, workspace: tenant.workspace }, prefix);
    expectError(await wrong.get('/deployments'), 401, 'Invalid API key.');
    expectError(
      await client(base(), { key: 'not-even-shaped-like-a-key', workspace: tenant.workspace }, prefix).get(
        '/deployments',
      ),
      401,
      'Invalid API key.',
    );
  });

  it('400 without X-Tenant-Id', async () => {
    const tenant = await svc.tenant();
    const res = await client(base(), null, prefix).get('/deployments', { 'x-api-key': tenant.key });
    expectError(res, 400, 'Missing X-Tenant-Id header: send the ID of the workspace to target.');
  });

  it('403 for a workspace of another organisation, or one that does not exist', async () => {
    const mine = await svc.tenant();
    const theirs = await svc.tenant();
    const detail = "X-Tenant-Id names a workspace outside this API key's organisation.";
    expectError(
      await client(base(), { key: mine.key, workspace: theirs.workspace }, prefix).get('/deployments'),
      403,
      detail,
    );
    expectError(
      await client(base(), { key: mine.key, workspace: `ws-${randomUUID()}` }, prefix).get('/deployments'),
      403,
      detail,
    );
  });

  it('404 `Deployment ID <id> not found.` for an unknown deployment on every deployment path', async () => {
    const api = client(base(), await svc.tenant(), prefix);
    const id = randomUUID();
    const detail = `Deployment ID ${id} not found.`;
    expectError(await api.get(`/deployments/${id}`), 404, detail);
    expectError(await api.patch(`/deployments/${id}`, { source_config: { build_on_push: true } }), 404, detail);
    expectError(await api.delete(`/deployments/${id}`), 404, detail);
    expectError(await api.get(`/deployments/${id}/revisions`), 404, detail);
    expectError(await api.get(`/deployments/${id}/revisions/${randomUUID()}`), 404, detail);
    expectError(await api.get('/deployments/not-a-uuid'), 404, 'Deployment ID not-a-uuid not found.');
  });

  it('404 for an unknown revision of a known deployment', async () => {
    const api = client(base(), await svc.tenant(), prefix);
    const d = (await api.post('/deployments', imageBody())).json;
    const rev = randomUUID();
    expectError(await api.get(`/deployments/${d.id}/revisions/${rev}`), 404, `Revision ID ${rev} not found.`);
  });

  it('404, never the content, for a deployment of another workspace (same organisation or not)', async () => {
    const owner = await svc.tenant();
    const d = (await client(base(), owner, prefix).post('/deployments', imageBody({ name: 'private-app' }))).json;
    await svc.cp.keys.addWorkspace(owner.org, `${owner.workspace}-2`);
    const sibling = client(base(), { key: owner.key, workspace: `${owner.workspace}-2` }, prefix);
    const stranger = client(base(), await svc.tenant(), prefix);
    for (const other of [sibling, stranger]) {
      const detail = `Deployment ID ${d.id} not found.`;
      const answers = [
        await other.get(`/deployments/${d.id}`),
        await other.patch(`/deployments/${d.id}`, { source_revision_config: { image_uri: 'x/y:2' } }),
        await other.get(`/deployments/${d.id}/revisions`),
        await other.get(`/deployments/${d.id}/revisions/${d.latest_revision_id}`),
        await other.delete(`/deployments/${d.id}`),
      ];
      for (const res of answers) {
        expectError(res, 404, detail);
        expect(res.text).not.toContain('private-app');
      }
      expect((await other.get('/deployments')).json.resources).toEqual([]);
    }
    const still = await client(base(), owner, prefix).get(`/deployments/${d.id}`);
    expect(still.status).toBe(200);
    expect(still.json.source_revision_config.image_uri).toBe('docker.io/acme/agent:1');
    expect((await client(base(), owner, prefix).get(`/deployments/${d.id}/revisions`)).json.resources).toHaveLength(1);
  });
});
