import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';
import { startRedis } from '../../helpers/redis-server.ts';
import { client, deploymentBody, imageBody, startControlPlane, type Answer, type TestControlPlane } from './helpers.ts';

/**
 * Every error status of the control plane, on both path forms, on the
 * service and through the edge; every error body is JSON, never a stack.
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

/** A JSON error answer with this status; its text shows no stack or source path. */
function expectError(res: Answer, status: number, detail?: unknown): void {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.text).not.toMatch(/\bat .*\(|\.ts:\d+|node_modules|Error:/);
  if (detail !== undefined) expect(res.json).toEqual({ detail });
  else expect(res.json).toHaveProperty('detail');
}

const targets = [
  { via: 'service', prefix: '/v2', base: () => svc.url },
  { via: 'service', prefix: '/api-host/v2', base: () => svc.url },
  { via: 'edge', prefix: '/v2', base: () => gw.url },
  { via: 'edge', prefix: '/api-host/v2', base: () => gw.url },
] as const;

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
