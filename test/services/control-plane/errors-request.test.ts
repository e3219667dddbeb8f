import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';
import { errorTargets, expectError } from './error-checks.ts';
import { client, deploymentBody, imageBody, startControlPlane, type TestControlPlane } from './helpers.ts';

/**
 * Errors of the control plane for requests it cannot take (422 bodies and
 * queries, 400 and 422 patches, 405 and unknown paths), on both path forms,
 * on the service and through the edge; every error body is JSON, never a stack.
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
  it('422 with {detail: [{loc, msg, type}]} for a body that fails validation', async () => {
    const api = client(base(), await svc.tenant(), prefix);
    const bad = await api.post('/deployments', {
      name: '',
      source: 'svn',
      source_config: { deployment_type: 'huge', build_on_push: 'yes' },
    });
    expectError(bad, 422);
    expect(bad.json.detail).toEqual(
      expect.arrayContaining([
        { loc: ['body', 'name'], msg: expect.any(String), type: 'too_small' },
        { loc: ['body', 'source'], msg: expect.stringContaining('github'), type: 'invalid_value' },
        {
          loc: ['body', 'source_config', 'deployment_type'],
          msg: expect.stringContaining('dev_free'),
          type: 'invalid_value',
        },
        {
          loc: ['body', 'source_config', 'build_on_push'],
          msg: expect.stringContaining('boolean'),
          type: 'invalid_type',
        },
      ]),
    );
    const missing = await api.post('/deployments', { source: 'github' });
    expect(missing.json.detail).toContainEqual({ loc: ['body', 'name'], msg: 'Field required', type: 'missing' });
    const git = await api.post('/deployments', {
      name: 'x',
      source: 'github',
      source_config: {},
      source_revision_config: {},
    });
    expect(git.json.detail).toEqual([
      { loc: ['body', 'source_config', 'repo_url'], msg: 'Field required for source "github"', type: 'missing' },
      {
        loc: ['body', 'source_revision_config', 'repo_ref'],
        msg: 'Field required for source "github"',
        type: 'missing',
      },
    ]);
    const url = await api.post('/deployments', {
      name: 'x',
      source: 'github',
      source_config: { repo_url: 'ext::sh -c id' },
      source_revision_config: { repo_ref: '--upload-pack=x' },
    });
    expect(url.json.detail.map((i: { loc: string[] }) => i.loc.join('.'))).toEqual([
      'body.source_config.repo_url',
      'body.source_revision_config.repo_ref',
    ]);
    const secrets = await api.post(
      '/deployments',
      imageBody({
        secrets: [
          { name: '1BAD', value: 'v' },
          { name: 'A', value: 'v' },
          { name: 'A', value: 'w' },
        ],
      }),
    );
    expect(secrets.json.detail).toEqual([
      {
        loc: ['body', 'secrets', 0, 'name'],
        msg: expect.stringContaining('environment variable'),
        type: 'invalid_format',
      },
      { loc: ['body', 'secrets', 2, 'name'], msg: 'duplicate secret name "A"', type: 'custom' },
    ]);
    expectError(await api.post('/deployments', [1, 2]), 422);
    const patch = await api.patch(`/deployments/${(await api.post('/deployments', imageBody())).json.id}`, {
      source_config: { build_on_push: 'true' },
    });
    expect(patch.json.detail).toEqual([
      { loc: ['body', 'source_config', 'build_on_push'], msg: expect.any(String), type: 'invalid_type' },
    ]);
  });

  it('422 for a body that is not JSON or absent, without echoing it', async () => {
    const api = client(base(), await svc.tenant(), prefix);
    const broken = await api.post('/deployments', '{"name": "x", "secrets": [{"name": "K", "value": "hunter2-secret"');
    expectError(broken, 422, [{ loc: ['body'], msg: 'Request body is not valid JSON.', type: 'json_invalid' }]);
    expect(broken.text).not.toContain('hunter2');
    expectError(await api.send('POST', '/deployments'), 422, [
      { loc: ['body'], msg: 'Field required', type: 'missing' },
    ]);
  });

  it('422 for query values out of range or unknown', async () => {
    const api = client(base(), await svc.tenant(), prefix);
    for (const q of ['limit=0', 'limit=101', 'limit=ten', 'offset=-1']) {
      const res = await api.get(`/deployments?${q}`);
      expectError(res, 422);
      expect(res.json.detail[0].loc).toEqual(['query', q.split('=')[0]]);
    }
    const status = await api.get('/deployments?status=READY,BOGUS');
    expect(status.json.detail).toEqual([
      { loc: ['query', 'status', 1], msg: expect.stringContaining('AWAITING_DATABASE'), type: 'invalid_value' },
    ]);
    const d = (await api.post('/deployments', imageBody())).json;
    expectError(await api.get(`/deployments/${d.id}/revisions?status=NOPE`), 422);
    expectError(await api.get(`/deployments/${d.id}/revisions?limit=1000`), 422);
  });

  it('400 when a patch would change name or source (the same values are accepted)', async () => {
    const api = client(base(), await svc.tenant(), prefix);
    const d = (await api.post('/deployments', imageBody({ name: 'fixed-name' }))).json;
    expectError(
      await api.patch(`/deployments/${d.id}`, { name: 'other' }),
      400,
      `Field "name" cannot be changed (deployment ${d.id} is named "fixed-name").`,
    );
    expectError(
      await api.patch(`/deployments/${d.id}`, { source: 'github' }),
      400,
      `Field "source" cannot be changed (deployment ${d.id} has source "external_docker").`,
    );
    expect((await api.patch(`/deployments/${d.id}`, { name: 'fixed-name', source: 'external_docker' })).status).toBe(
      200,
    );
    expect((await api.get(`/deployments/${d.id}`)).json).toMatchObject({
      name: 'fixed-name',
      source: 'external_docker',
    });
  });

  it('422 when a patch would leave the deployment unbuildable', async () => {
    const api = client(base(), await svc.tenant(), prefix);
    const d = (await api.post('/deployments', deploymentBody('/nonexistent/repo'))).json;
    const res = await api.patch(`/deployments/${d.id}`, { source_config: { repo_url: null } });
    expectError(res, 422, [
      { loc: ['body', 'source_config', 'repo_url'], msg: 'cannot be null for source "github"', type: 'value_error' },
    ]);
    expect((await api.get(`/deployments/${d.id}`)).json.source_config.repo_url).toBe('/nonexistent/repo');
  });

  it('405 with Allow for a method a path does not have; 404 JSON for an unknown path', async () => {
    const api = client(base(), await svc.tenant(), prefix);
    const put = await api.send('PUT', '/deployments');
    expectError(put, 405, 'Method Not Allowed');
    expect(put.headers.get('allow')).toBe('GET, POST');
    expect((await api.send('POST', `/deployments/${randomUUID()}`, {})).headers.get('allow')).toBe(
      'GET, PATCH, DELETE',
    );
    expectError(await api.get('/nothing-here'), 404, 'Not Found');
  });
});
