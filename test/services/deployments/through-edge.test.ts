import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisKeyRegistry } from '../../../src/keys/redis-registry.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';
import { deleteByPrefix } from '../../helpers/redis-keys.ts';
import { client, deploymentBody, makeRepo, TEST_SECRETS_KEY, type TestRepo } from '../control-plane/helpers.ts';
import { BARE_APP, deployed } from './helpers.ts';
import { SHARED_REDIS_URL, sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';

/**
 * The whole path a user takes, through the real edge and the bundled control plane: create a deployment from a git
 * repository, poll it, read its `url`, call it with the unmodified SDK (rate limited like all traffic), read its
 * `/docs`, delete it (its url answers 404). The shared Redis is used under unique prefixes, removed afterwards.
 */

const RUN = uniquePrefix('test:deploy-edge');
const redis = sharedRedis();
let gw: TestGateway;
let repo: TestRepo;
let workDir: string;
const tenant = {
  org: `org-${randomBytes(4).toString('hex')}`,
  workspace: `ws-${randomBytes(4).toString('hex')}`,
  key: '',
};

beforeAll(async () => {
  repo = makeRepo(BARE_APP);
  workDir = mkdtempSync(join(tmpdir(), 'deploy-edge-'));
  gw = await startTestGateway({
    REDIS_URL: SHARED_REDIS_URL,
    KEY_PREFIX: `t${randomBytes(6).toString('hex')}`,
    CONTROL_PLANE_PREFIX: `${RUN}:cp`,
    API_KEYS_PREFIX: `${RUN}:keys`,
    ROUTES_PREFIX: `${RUN}:routes`,
    AGENT_STORE_PREFIX: `${RUN}:agent`,
    DEPLOYMENT_DATA_PREFIX: `deploy-edge-${randomBytes(4).toString('hex')}`,
    SECRETS_KEY: TEST_SECRETS_KEY,
    BUILD_WORK_DIR: workDir,
    NODE_ENV: 'test',
    // The shared Redis has no password (no user of its own per deployment is possible): another organisation's
    // deployment runs only with every tenant trusted (revision-gets-platform-redis-credentials.test.ts has the ACLs).
    TRUST_ALL_TENANTS: '1',
  });
  const keys = new RedisKeyRegistry(redis, { prefix: `${RUN}:keys` });
  await keys.addWorkspace(tenant.org, tenant.workspace);
  tenant.key = (await keys.createKey(tenant.org)).key;
});

afterAll(async () => {
  await gw?.close();
  repo?.remove();
  rmSync(workDir, { recursive: true, force: true });
  await deleteByPrefix(redis, RUN);
  await redis.quit();
});

describe('a deployment through the edge', () => {
  it('create, poll, the SDK at its url (rate limited), /docs, delete: 404 naming it', async () => {
    const api = client(gw.url, tenant);
    const d = (
      await api.post('/deployments', deploymentBody(repo.url, { secrets: [{ name: 'TOKEN', value: 'edge' }] }))
    ).json;
    await deployed(api, d.id, d.latest_revision_id);
    const url = (await api.get(`/deployments/${d.id}`)).json.url as string;
    expect(url).toMatch(new RegExp(`/deployments/${d.id}$`));

    const sdk = new Client({ apiUrl: url, apiKey: tenant.key });
    const events: { event: string; data: unknown }[] = [];
    for await (const e of sdk.runs.stream(null, 'echo', { input: { text: 'through the edge' }, streamMode: 'values' }))
      events.push(e);
    const last = events.filter((e) => e.event === 'values').at(-1)?.data as { answer: string };
    expect(last.answer).toBe('v1 hello edge: through the edge');

    const search = await fetch(`${url}/assistants/search`, {
      method: 'POST',
      headers: { 'x-api-key': tenant.key, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(search.status).toBe(200);
    expect(search.headers.get('ratelimit-policy')).not.toBeNull();
    await search.body?.cancel();
    const docs = await fetch(`${url}/docs`);
    expect(docs.status).toBe(200);
    await docs.body?.cancel();

    expect((await api.delete(`/deployments/${d.id}`)).status).toBe(204);
    const gone = await fetch(`${url}/ok`, { headers: { 'x-api-key': tenant.key } });
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as { detail: string }).detail).toContain(d.id);
  }, 120_000);
});
