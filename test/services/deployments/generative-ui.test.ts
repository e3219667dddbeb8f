import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisKeyRegistry } from '../../../src/keys/redis-registry.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';
import { deleteByPrefix } from '../../helpers/redis-keys.ts';
import { SHARED_REDIS_URL, sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';
import { client, deploymentBody, makeRepo, TEST_SECRETS_KEY, type TestRepo } from '../control-plane/helpers.ts';
import { BARE_APP, deployed } from './helpers.ts';
import { waitForRevision } from '../control-plane/helpers.ts';

/**
 * Generative UI of a deployment, through the real edge and the bundled control plane: `ui` in the repository's
 * langgraph.json is bundled by the revision's own (sandboxed, when this host has bwrap) process as it starts; at the
 * deployment's url `POST /ui/{graph}` answers tags that point back at that url (the edge's host and the
 * `/deployments/{id}` prefix), and the files load there without a key. A component with a syntax error fails the
 * revision with one line naming it, not the gateway.
 */
const RUN = uniquePrefix('test:deploy-ui');
const redis = sharedRedis();
const CARD = 'export default { weather: (p: { city: string }) => <b>Deployed weather in {p.city}</b> };\n';
const CONFIG = JSON.stringify({ graphs: { echo: './graph.ts:graph' }, ui: { echo: './ui.tsx' } });
let gw: TestGateway;
let repo: TestRepo;
let workDir: string;
const tenant = {
  org: `org-${randomBytes(4).toString('hex')}`,
  workspace: `ws-${randomBytes(4).toString('hex')}`,
  key: '',
};

beforeAll(async () => {
  repo = makeRepo({ ...BARE_APP, 'langgraph.json': CONFIG, 'ui.tsx': CARD });
  repo.branches({ 'ui-syntax-error': { 'ui.tsx': 'export default {\n  weather: () => <b>x</b> if\n};\n' } });
  workDir = mkdtempSync(join(tmpdir(), 'deploy-ui-'));
  gw = await startTestGateway({
    REDIS_URL: SHARED_REDIS_URL,
    KEY_PREFIX: `t${randomBytes(6).toString('hex')}`,
    CONTROL_PLANE_PREFIX: `${RUN}:cp`,
    API_KEYS_PREFIX: `${RUN}:keys`,
    ROUTES_PREFIX: `${RUN}:routes`,
    AGENT_STORE_PREFIX: `${RUN}:agent`,
    DEPLOYMENT_DATA_PREFIX: `deploy-ui-${randomBytes(4).toString('hex')}`,
    SECRETS_KEY: TEST_SECRETS_KEY,
    BUILD_WORK_DIR: workDir,
    BUILD_DELAY_SECONDS: '0.2',
    NODE_ENV: 'test',
    // The shared Redis has no password: another organisation's deployment runs only with every tenant trusted.
    TRUST_ALL_TENANTS: '1',
  });
  const keys = new RedisKeyRegistry(redis, { prefix: `${RUN}:keys` });
  await keys.addWorkspace(tenant.org, tenant.workspace);
  tenant.key = (await keys.createKey(tenant.org)).key;
});

afterAll(async () => {
  await gw?.close();
  repo?.remove();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
  await deleteByPrefix(redis, RUN);
  await redis.quit();
});

describe('generative UI of a deployment', { timeout: 120_000 }, () => {
  it('POST {url}/ui/echo names files under {url}; they load without a key and hold the component', async () => {
    const api = client(gw.url, tenant);
    const d = (await api.post('/deployments', deploymentBody(repo.url))).json;
    await deployed(api, d.id, d.latest_revision_id);
    const url = (await api.get(`/deployments/${d.id}`)).json.url as string;

    const html = await new Client({ apiUrl: url, apiKey: tenant.key })['~ui'].getComponent('echo', 'weather');
    const src = /src="([^"]+)"/.exec(html)?.[1];
    expect(src).toBe(`${url}/ui/echo/entrypoint.js`);
    const js = await fetch(src!);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    const code = await js.text();
    expect(code).toContain('Deployed weather in');
    expect(code).not.toContain(workDir); // where the host keeps builds stays its own

    const noKey = await fetch(`${url}/ui/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"name":"weather"}',
    });
    expect(noKey.status).toBe(401);
    await noKey.body?.cancel();
  });

  it('a syntax error in the component: the revision fails in one line naming ui.echo, file, line; the gateway serves on', async () => {
    const api = client(gw.url, tenant);
    const body = deploymentBody(repo.url, { source_revision_config: { repo_ref: 'ui-syntax-error' } });
    const d = (await api.post('/deployments', body)).json;
    const rev = await waitForRevision(api, d.id, d.latest_revision_id, undefined, 60_000);
    expect(rev.status).toBe('BUILD_FAILED');
    expect(rev.status_message).toMatch(/^BUILD_FAILED: ui\.echo: ui\.tsx:2:\d+: Expected "\}" but found "if"$/);
    expect((await fetch(`${gw.url}/ok`)).status).toBeLessThan(500);
  });
});
