import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Builder, BuildRequest } from '../../src/services/control-plane/builds/builder.ts';
import { redactRepoUrl } from '../../src/services/control-plane/builds/repo-url.ts';
import {
  client,
  deploymentBody,
  startControlPlane,
  waitForRevision,
  type TestControlPlane,
} from '../services/control-plane/helpers.ts';

/**
 * Finding "repo_url credentials in clear": `https://user:TOKEN@host/...` was stored as given and returned by GET.
 * Now the full URL is sealed like a secret, the API shows `https://user:***@host/...`, and the builder still clones
 * with the credentials.
 */
const TOKEN = 'ghp_SuperSecretToken123';
const URL_WITH_TOKEN = `https://builder:${TOKEN}@git.example.test/acme/agent.git`;
const SHOWN = 'https://builder:***@git.example.test/acme/agent.git';

/** Records the URL each build was asked to clone, and builds nothing. */
const cloned: string[] = [];
const builder: Builder = {
  async build(req: BuildRequest) {
    cloned.push(req.repoUrl ?? '');
    return { commitSha: 'a'.repeat(40), graphs: { agent: 'src/agent.ts:graph' }, authPath: null };
  },
};

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane({}, { builder });
});
afterAll(() => cp?.close());

describe('repo_url credentials are sealed and never returned', () => {
  it('stored sealed, returned redacted, cloned with the credentials; a PATCH echoing the redacted URL keeps them', async () => {
    const tenant = await cp.tenant();
    const api = client(cp.url, tenant);
    const created = await api.post('/deployments', deploymentBody(URL_WITH_TOKEN));
    expect(created.status).toBe(201);
    expect(created.json.source_config.repo_url).toBe(SHOWN);
    const id = created.json.id as string;
    await waitForRevision(api, id, created.json.latest_revision_id);
    expect(cloned.at(-1)).toBe(URL_WITH_TOKEN);

    const got = await api.get(`/deployments/${id}`);
    expect(got.json.source_config.repo_url).toBe(SHOWN);
    expect(got.text).not.toContain(TOKEN);
    expect((await api.get('/deployments')).text).not.toContain(TOKEN);
    const stored = await cp.cp.store.getDeployment(tenant.workspace, id);
    expect(JSON.stringify(stored)).not.toContain(TOKEN);

    // A client sending back what GET gave it, with a new ref: the sealed credentials stay.
    const patched = await api.patch(`/deployments/${id}`, {
      source_config: got.json.source_config,
      source_revision_config: { repo_ref: 'v2' },
    });
    expect(patched.status).toBe(200);
    await waitForRevision(api, id, patched.json.latest_revision_id);
    expect(cloned.at(-1)).toBe(URL_WITH_TOKEN);

    // A new URL without credentials drops them.
    const plain = 'https://git.example.test/acme/agent.git';
    const replaced = await api.patch(`/deployments/${id}`, {
      source_config: { repo_url: plain },
      source_revision_config: { repo_ref: 'v3' },
    });
    await waitForRevision(api, id, replaced.json.latest_revision_id);
    expect(cloned.at(-1)).toBe(plain);
    expect(cp.logs.raw()).not.toContain(TOKEN);
  });

  it('redaction keeps the user name, hides a password or a bare token, leaves ssh user names', () => {
    expect(redactRepoUrl('https://u:p@h/x')).toBe('https://u:***@h/x');
    expect(redactRepoUrl(`https://${TOKEN}@github.com/a/b.git`)).toBe('https://***@github.com/a/b.git');
    expect(redactRepoUrl('ssh://git@h/x.git')).toBe('ssh://git@h/x.git');
    expect(redactRepoUrl('ssh://git:pw@h/x.git')).toBe('ssh://git:***@h/x.git');
    expect(redactRepoUrl('git@github.com:a/b.git')).toBe('git@github.com:a/b.git');
    expect(redactRepoUrl('https://h/x')).toBe('https://h/x');
  });
});
