import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { extract } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen, type Listening } from '../../../src/listen/listen.ts';
import { createLogger } from '../../../src/log.ts';
import { internalApp } from '../../../src/services/control-plane/api/internal-routes.ts';
import { SecretBox } from '../../../src/services/control-plane/store/secrets.ts';
import { revisionToken } from '../../../src/services/revision-host/revision-token.ts';
import { BARE_APP, deployed, graphSource } from '../deployments/helpers.ts';
import {
  client,
  deploymentBody,
  makeRepo,
  startControlPlane,
  TEST_SECRETS_KEY,
  type Client,
  type Tenant,
  type TestControlPlane,
  type TestRepo,
} from './helpers.ts';

/**
 * A build ends at an artifact (builds/artifacts.ts): the build folder packed as a gzipped tar named by its sha256 in
 * ARTIFACTS_DIR, kept in the revision's record (never shown by the API), served to the revision's pod by the internal
 * endpoints (api/internal-routes.ts) only with that revision's token, and removed with the builds not kept. Real git
 * repositories, a real build and load check by the local host, the internal app on a real port.
 */

let t: TestControlPlane;
let tenant: Tenant;
let other: Tenant;
let repo: TestRepo;
let internal: Listening;
let api: Client;
const tokenKey = new SecretBox(Buffer.from(TEST_SECRETS_KEY, 'base64')).derive('revision-tokens');

beforeAll(async () => {
  repo = makeRepo(BARE_APP);
  repo.branches({ v2: { 'graph.ts': graphSource('v2') } });
  t = await startControlPlane({ KEEP_BUILDS: '1' }, { host: undefined });
  internal = await listen(t.cp.internal, 0, '127.0.0.1');
  tenant = await t.tenant('a');
  other = await t.tenant('b');
  api = client(t.url, tenant);
});

afterAll(async () => {
  await internal?.close();
  await t?.close();
  repo?.remove();
});

const artifactsDir = () => join(t.workDir, 'artifacts');
const sha256Of = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function deployApp(who: Client = api) {
  const d = (await who.post('/deployments', deploymentBody(repo.url))).json;
  await deployed(who, d.id, d.latest_revision_id);
  const rev = (await t.cp.store.getRevision(d.id, d.latest_revision_id))!;
  expect(rev.artifact).toBeTruthy();
  return {
    d,
    rev,
    artifact: rev.artifact!,
    token: revisionToken(tokenKey, { deploymentId: d.id, revisionId: rev.id }),
  };
}

/** Every file, folder and link below `dir`: path → content (a link: its target). */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      const info = statSync(path, { throwIfNoEntry: false });
      const rel = relative(dir, path);
      if (existsSync(path) && info?.isDirectory() && !isLink(path)) {
        out[rel + '/'] = '';
        walk(path);
      } else out[rel] = isLink(path) ? `-> ${readlinkSync(path)}` : readFileSync(path, 'base64');
    }
  };
  walk(dir);
  return out;
}
const isLink = (p: string) => {
  try {
    readlinkSync(p);
    return true;
  } catch {
    return false;
  }
};

describe('a build ends at an artifact', () => {
  it('the archive holds exactly the build folder but its .git, its name and record are its sha256 and size, the API shows none of it', async () => {
    const { d, rev, artifact } = await deployApp();
    const file = join(artifactsDir(), `${artifact.sha256}.tar.gz`);
    expect(sha256Of(file)).toBe(artifact.sha256);
    expect(statSync(file).size).toBe(artifact.bytes);
    expect(readdirSync(artifactsDir()).filter((f) => f.startsWith('.packing-'))).toEqual([]);
    const out = mkdtempSync(join(tmpdir(), 'artifact-out-'));
    try {
      await extract({ file, cwd: out });
      // Everything of the build folder but the checkout's `.git` (its config may hold the repository's credentials).
      const built = tree(t.cp.builds.folderOf(d.id, rev.id));
      expect(Object.keys(built).some((p) => p.startsWith('.git/'))).toBe(true);
      expect(tree(out)).toEqual(Object.fromEntries(Object.entries(built).filter(([p]) => !/^\.git(\/|$)/.test(p))));
      expect(Object.keys(tree(out))).toEqual(expect.arrayContaining(['langgraph.json', 'graph.ts']));
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
    const shown = (await api.get(`/deployments/${d.id}/revisions/${rev.id}`)).json;
    expect(shown.artifact).toBeUndefined();
    expect(JSON.stringify(shown)).not.toContain(artifact.sha256);
    const log = (await api.get(`/deployments/${d.id}/revisions/${rev.id}/build_log`)).json;
    expect(log.build_log).toContain(`artifact sha256:${artifact.sha256}`);
  });

  it('KEEP_BUILDS: a newer deploy removes the artifact no kept revision uses; a delete removes the rest', async () => {
    const { d, artifact } = await deployApp();
    const next = (await api.patch(`/deployments/${d.id}`, { source_revision_config: { repo_ref: 'v2' } })).json;
    await deployed(api, d.id, next.latest_revision_id);
    const v2 = (await t.cp.store.getRevision(d.id, next.latest_revision_id))!.artifact!;
    expect(existsSync(join(artifactsDir(), `${artifact.sha256}.tar.gz`))).toBe(false);
    expect(existsSync(join(artifactsDir(), `${v2.sha256}.tar.gz`))).toBe(true);
    expect((await api.delete(`/deployments/${d.id}`)).status).toBe(204);
    expect(existsSync(join(artifactsDir(), `${v2.sha256}.tar.gz`))).toBe(false);
  });
});

describe('the internal endpoints a pod uses', () => {
  const get = (path: string, headers: Record<string, string> = {}) => fetch(internal.url + path, { headers });
  const check = (token: string, key: string) =>
    fetch(`${internal.url}/internal/keys/check`, {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: JSON.stringify({ key }),
    });

  it('the artifact only to its own revision token: 401 without or with a forged one, 404 for any other sha256', async () => {
    const mine = await deployApp();
    const theirs = await deployApp(client(t.url, other));
    const path = `/internal/artifacts/${mine.artifact.sha256}`;

    const ok = await get(path, bearer(mine.token));
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('application/gzip');
    const body = Buffer.from(await ok.arrayBuffer());
    expect(createHash('sha256').update(body).digest('hex')).toBe(mine.artifact.sha256);

    expect((await get(path)).status).toBe(401);
    expect((await get(path, bearer(`${mine.d.id}.${mine.rev.id}.forged`))).status).toBe(401);
    expect((await get(path, { authorization: mine.token })).status).toBe(401);
    // Another revision's token, even a valid one, opens only its own artifact.
    expect((await get(path, bearer(theirs.token))).status).toBe(404);
    expect((await get(`/internal/artifacts/${theirs.artifact.sha256}`, bearer(mine.token))).status).toBe(404);
    expect((await get(`/internal/artifacts/${'0'.repeat(64)}`, bearer(mine.token))).status).toBe(404);
    for (const hostile of ['..%2F..%2Fetc%2Fpasswd', '%2e%2e', `${mine.artifact.sha256}.tar.gz`, 'A'.repeat(64)])
      expect((await get(`/internal/artifacts/${hostile}`, bearer(mine.token))).status).toBe(404);
  });

  it('a key check accepts the keys of the revision’s organisation only, and names no other', async () => {
    const mine = await deployApp();
    const ok = await check(mine.token, tenant.key);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ accepted: true });
    const foreign = await check(mine.token, other.key);
    const text = await foreign.text();
    expect(JSON.parse(text)).toEqual({ accepted: false });
    expect(text).not.toContain(other.org);
    expect(await (await check(mine.token, 'gwk_made-up')).json()).toEqual({ accepted: false });
    expect((await check('nope', tenant.key)).status).toBe(401);
    const big = await fetch(`${internal.url}/internal/keys/check`, {
      method: 'POST',
      headers: { ...bearer(mine.token), 'content-type': 'application/json' },
      body: JSON.stringify({ key: 'k'.repeat(10_000) }),
    });
    expect(big.status).toBe(413);
    // A deleted deployment's token opens nothing.
    expect((await api.delete(`/deployments/${mine.d.id}`)).status).toBe(204);
    expect((await check(mine.token, tenant.key)).status).toBe(401);
  });

  it('key checks are throttled per revision (429 with Retry-After), another revision keeps its own budget', async () => {
    const a = await deployApp();
    const b = await deployApp();
    // The same routes on the same store, with a clock that stands still: exactly the burst passes.
    const frozen = internalApp({
      store: t.cp.store,
      keys: t.cp.keys,
      artifacts: null,
      tokenKey,
      log: createLogger('silent'),
      keyChecksPerSecond: 5,
      now: () => 1000,
    });
    const ask = (token: string) =>
      frozen.request('/internal/keys/check', {
        method: 'POST',
        headers: { ...bearer(token), 'content-type': 'application/json' },
        body: JSON.stringify({ key: 'gwk_guess' }),
      });
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await ask(a.token)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    expect(Number((await ask(a.token)).headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await ask(b.token)).status).toBe(200);
  });
});
