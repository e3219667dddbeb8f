import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestGateway } from '../../helpers/gateway.ts';
import { client, deploymentBody, makeRepo, type Tenant, type TestRepo } from '../control-plane/helpers.ts';
import { startDeploymentsGateway, type DeploymentsGateway } from './deployments-gateway.ts';
import { BARE_APP, deployed } from './helpers.ts';
import { waitForRevision } from '../control-plane/helpers.ts';

/**
 * Generative UI of a deployment, through the real edge and the bundled control plane: `ui` in the repository's
 * langgraph.json is bundled by the revision's own (sandboxed, when this host has bwrap) process as it starts; at the
 * deployment's url `POST /ui/{graph}` answers tags that point back at that url (the edge's host and the
 * `/deployments/{id}` prefix), and the files load there without a key. A component with a syntax error fails the
 * revision with one line naming it, not the gateway.
 */
const CARD = 'export default { weather: (p: { city: string }) => <b>Deployed weather in {p.city}</b> };\n';
const CONFIG = JSON.stringify({ graphs: { echo: './graph.ts:graph' }, ui: { echo: './ui.tsx' } });
let setup: DeploymentsGateway;
let gw: TestGateway;
let repo: TestRepo;
let workDir: string;
let tenant: Tenant;

beforeAll(async () => {
  repo = makeRepo({ ...BARE_APP, 'langgraph.json': CONFIG, 'ui.tsx': CARD });
  repo.branches({ 'ui-syntax-error': { 'ui.tsx': 'export default {\n  weather: () => <b>x</b> if\n};\n' } });
  setup = await startDeploymentsGateway('deploy-ui', { BUILD_DELAY_SECONDS: '0.2' });
  ({ gw, tenant, workDir } = setup);
});

afterAll(async () => {
  await setup?.close();
  repo?.remove();
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
