import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BARE_APP } from '../deployments/helpers.ts';
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
 * The install's limits as the builds pass them: NODE_MODULES_MAX_MB fails the revision with one line, and the app
 * config is read from its own file name (a config not named langgraph.json kept its `install_scripts` off). The
 * app's postinstall writes 2 MiB into node_modules: it runs only if `install_scripts` was read from `app.json`.
 */
const BLOB =
  "node -e \"require('fs').mkdirSync('node_modules',{recursive:true});require('fs').writeFileSync('node_modules/blob',Buffer.alloc(2<<20))\"";
const APP = {
  'graph.ts': BARE_APP['graph.ts'],
  'app.json': JSON.stringify({ graphs: { echo: './graph.ts:graph' }, install_scripts: true }),
  'package.json': JSON.stringify({ name: 'blob', private: true, type: 'module', scripts: { postinstall: BLOB } }),
};

let t: TestControlPlane;
let repo: TestRepo;
beforeAll(async () => {
  repo = makeRepo(APP);
  t = await startControlPlane({ NODE_MODULES_MAX_MB: '1' }, { host: undefined });
});
afterAll(async () => {
  await t?.close();
  repo?.remove();
});

describe('install limits of a build', { timeout: 90_000 }, () => {
  it('node_modules over NODE_MODULES_MAX_MB fails the revision saying so (config app.json, its scripts on)', async () => {
    const api = client(t.url, await t.tenant('blob'));
    const body = deploymentBody(repo.url, {
      source_revision_config: { repo_ref: 'main', langgraph_config_path: 'app.json', image_uri: null },
    });
    const d = (await api.post('/deployments', body)).json;
    const rev = await waitForRevision(api, d.id, d.latest_revision_id, undefined, 60_000);
    expect(rev.status).toBe('BUILD_FAILED');
    expect(rev.status_message).toBe('BUILD_FAILED: npm install: node_modules is over its limit of 1 MiB');
  });
});
