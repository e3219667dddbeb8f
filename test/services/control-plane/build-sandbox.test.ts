import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ORG } from '../../../src/keys/bootstrap.ts';
import { PACKAGED_APP } from '../deployments/helpers.ts';
import {
  client,
  deploymentBody,
  makeRepo,
  startControlPlane,
  waitForRevision,
  type TestControlPlane,
  type TestRepo,
} from './helpers.ts';

/**
 * Without a sandbox (SANDBOX=off) npm and the install scripts of a build would run as the gateway: a deployment of
 * another organisation than the gateway's own is refused at create (409), so nothing of it is built, unless
 * TRUST_ALL_TENANTS (a build of one made earlier fails before npm: NO_SANDBOX_REFUSAL, builds/build-sandbox.ts); the
 * gateway's own organisation builds as before.
 */
const SCRIPTED = {
  ...PACKAGED_APP,
  'langgraph.json': JSON.stringify({ graphs: { echo: './graph.ts:graph' }, install_scripts: true }),
  'package.json': JSON.stringify({
    name: 'scripted',
    private: true,
    type: 'module',
    scripts: { postinstall: "node -e \"require('fs').writeFileSync('ran', '')\"" },
  }),
};

let t: TestControlPlane;
let repo: TestRepo;
beforeAll(async () => {
  repo = makeRepo(SCRIPTED);
  t = await startControlPlane({ SANDBOX: 'off' }, { host: undefined });
});
afterAll(async () => {
  await t?.close();
  repo?.remove();
});

async function deploy(tenant: { key: string; workspace: string }) {
  const api = client(t.url, tenant);
  const d = (await api.post('/deployments', deploymentBody(repo.url))).json;
  const rev = await waitForRevision(api, d.id, d.latest_revision_id, undefined, 60_000);
  return { rev, folder: join(t.workDir, 'us', d.id, d.latest_revision_id) };
}

describe('builds without a sandbox', { timeout: 90_000 }, () => {
  it("another organisation's deployment is refused at create: nothing is built, npm never runs", async () => {
    const api = client(t.url, await t.tenant('other'));
    const res = await api.post('/deployments', deploymentBody(repo.url));
    expect(res.status).toBe(409);
    expect(res.json.detail).toContain('no sandbox for deployments (SANDBOX)');
    expect((await api.get('/deployments')).json.resources).toEqual([]);
    expect(existsSync(join(t.workDir, 'us'))).toBe(false);
  });

  it("the gateway's own organisation builds and deploys", async () => {
    const workspace = `ws-own-${Date.now()}`;
    await t.cp.keys.addWorkspace(DEFAULT_ORG, workspace);
    const { key } = await t.cp.keys.createKey(DEFAULT_ORG);
    const { rev, folder } = await deploy({ key, workspace });
    expect(rev.status, rev.status_message ?? '').toBe('DEPLOYED');
    expect(existsSync(join(folder, 'ran'))).toBe(true);
  });
});
