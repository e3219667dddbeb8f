import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisKeyRegistry } from '../../../src/keys/redis-registry.ts';
import { SettingsError } from '../../../src/settings/env.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';
import { deleteByPrefix } from '../../helpers/redis-keys.ts';
import { SHARED_REDIS_URL, sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';
import {
  client,
  deploymentBody,
  eventually,
  makeRepo,
  TEST_SECRETS_KEY,
  type TestRepo,
} from '../control-plane/helpers.ts';
import { BARE_APP, deployed } from './helpers.ts';

/**
 * Issue 28, "Why 1": with REDIS_URL, a restart that cannot open a deployment's sealed secrets (SECRETS_KEY changed or
 * absent) left the deployment READY, its revision DEPLOYED, and its url answering 502 from the previous process's
 * dead port. Now: the deployment shows why (`serving_error`, not READY, its revision DEPLOY_FAILED), its url answers a
 * JSON 503 naming it, and a gateway without SECRETS_KEY refuses to start over sealed secrets, naming the variable.
 * Two (three) gateway boots on the shared Redis under unique prefixes, one BUILD_WORK_DIR.
 */

const RUN = uniquePrefix('test:restart-unservable');
const DATA = `restart-unservable-${randomBytes(4).toString('hex')}`;
const OTHER_KEY = Buffer.alloc(32, 9).toString('base64');
const redis = sharedRedis();
let repo: TestRepo;
let workDir: string;
const tenant = {
  org: `org-${randomBytes(4).toString('hex')}`,
  workspace: `ws-${randomBytes(4).toString('hex')}`,
  key: '',
};

const env = (secretsKey: string | null): Record<string, string> => ({
  REDIS_URL: SHARED_REDIS_URL,
  KEY_PREFIX: `t${randomBytes(6).toString('hex')}`,
  CONTROL_PLANE_PREFIX: `${RUN}:cp`,
  API_KEYS_PREFIX: `${RUN}:keys`,
  ROUTES_PREFIX: `${RUN}:routes`,
  AGENT_STORE_PREFIX: `${RUN}:agent`,
  DEPLOYMENT_DATA_PREFIX: DATA,
  BUILD_WORK_DIR: workDir,
  NODE_ENV: 'test',
  TRUST_ALL_TENANTS: '1',
  ...(secretsKey === null ? {} : { SECRETS_KEY: secretsKey }),
});

beforeAll(async () => {
  repo = makeRepo(BARE_APP);
  workDir = mkdtempSync(join(tmpdir(), 'restart-unservable-'));
  const keys = new RedisKeyRegistry(redis, { prefix: `${RUN}:keys` });
  await keys.addWorkspace(tenant.org, tenant.workspace);
  tenant.key = (await keys.createKey(tenant.org)).key;
});

afterAll(async () => {
  repo?.remove();
  rmSync(workDir, { recursive: true, force: true });
  await deleteByPrefix(redis, RUN);
  await deleteByPrefix(redis, DATA);
  await redis.quit();
});

describe('a deployment that cannot be served again after a restart', () => {
  it('shows why, is not READY, its revision is FAILED, and its url answers a JSON 503 naming it', async () => {
    let gw: TestGateway | undefined = await startTestGateway(env(TEST_SECRETS_KEY));
    let id = '';
    let rev = '';
    let url = '';
    try {
      const api = client(gw.url, tenant);
      const d = (
        await api.post('/deployments', deploymentBody(repo.url, { secrets: [{ name: 'TOKEN', value: 'sealed' }] }))
      ).json;
      id = d.id;
      rev = d.latest_revision_id;
      await deployed(api, id, rev);
      const first = (await api.get(`/deployments/${id}`)).json;
      expect(first.status).toBe('READY');
      url = first.url;
      expect((await fetch(`${url}/ok`, { headers: { 'x-api-key': tenant.key } })).status).toBe(200);
    } finally {
      await gw.close();
      gw = undefined;
    }

    // Stopped, the gateway leaves no route to a dead port: the deployment's route says it is starting (a 503).
    const left = JSON.parse((await redis.hget(`${RUN}:routes:us:{routes}:table`, id)) ?? '{}') as Record<
      string,
      string
    >;
    expect([left.unavailable, left.target]).toEqual(['starting', '']);

    // Second boot: another SECRETS_KEY, so the secrets sealed by the first cannot be opened.
    gw = await startTestGateway(env(OTHER_KEY));
    try {
      const api = client(gw.url, tenant);
      const shown = await eventually(
        async () => {
          const d = (await api.get(`/deployments/${id}`)).json;
          return d.serving_error ? d : null;
        },
        30_000,
        'the deployment shows its serving_error',
      );
      expect(shown.serving_error).toMatch(/SECRETS_KEY/);
      expect(shown.status).not.toBe('READY');
      const revision = (await api.get(`/deployments/${id}/revisions/${rev}`)).json;
      expect(revision.status).toContain('FAILED');
      expect(revision.status_message).toMatch(/SECRETS_KEY/);
      const answer = await fetch(`${gw.url}/deployments/${id}/ok`, { headers: { 'x-api-key': tenant.key } });
      expect(answer.status).toBe(503);
      expect(answer.headers.get('content-type')).toMatch(/application\/json/);
      const body = (await answer.json()) as { detail: string; code: string };
      expect(body.code).toBe('deployment_unavailable');
      expect(body.detail).toContain(id);
      // The secret's value never shows, at the edge or in the API.
      expect(JSON.stringify(body) + JSON.stringify(shown)).not.toContain('sealed"');
    } finally {
      await gw.close();
    }

    // Third boot: no SECRETS_KEY at all over sealed secrets: refused, naming the variable, in one line.
    const refused = await startTestGateway(env(null)).then(
      async (started) => (await started.close(), null),
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(SettingsError);
    expect((refused as SettingsError).variable).toBe('SECRETS_KEY');
    expect((refused as Error).message).not.toContain('\n');

    // Fourth boot: the key they were sealed with put back: served again, READY and DEPLOYED again.
    gw = await startTestGateway(env(TEST_SECRETS_KEY));
    try {
      const api = client(gw.url, tenant);
      await eventually(
        async () =>
          (await fetch(`${gw.url}/deployments/${id}/ok`, { headers: { 'x-api-key': tenant.key } })).status === 200 ||
          null,
        30_000,
        'the url serves again',
      );
      const d = (await api.get(`/deployments/${id}`)).json;
      expect([d.status, d.serving_error]).toEqual(['READY', undefined]);
      expect((await api.get(`/deployments/${id}/revisions/${rev}`)).json.status).toBe('DEPLOYED');
    } finally {
      await gw.close();
    }
  }, 120_000);
});
