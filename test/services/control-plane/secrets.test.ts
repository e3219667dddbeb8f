import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretError } from '../../../src/services/control-plane/store/secrets.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';
import { deleteByPrefix, keysByPrefix } from '../../helpers/redis-keys.ts';
import { client, imageBody, startControlPlane, waitForRevision, type TestControlPlane } from './helpers.ts';
import { SHARED_REDIS_URL, sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';

/**
 * Secret values go in once and never come out: not in any answer, not in
 * any log line (the service logging at trace, the edge at info), not in
 * Redis except as AES-256-GCM ciphertext that only the right key opens.
 */

const PREFIX = uniquePrefix('test:cp-secrets');
const env = {
  REDIS_URL: SHARED_REDIS_URL,
  CONTROL_PLANE_PREFIX: PREFIX,
  API_KEYS_PREFIX: `${PREFIX}:keys`,
  LOG_LEVEL: 'trace',
};
const redis = sharedRedis();
let svc: TestControlPlane;
let gw: TestGateway;

beforeAll(async () => {
  svc = await startControlPlane(env);
  gw = await startTestGateway({ CONTROL_PLANE_URL: svc.url });
});

afterAll(async () => {
  await gw?.close();
  await svc?.close();
  await deleteByPrefix(redis, PREFIX);
  await redis.quit();
});

describe('secrets', () => {
  it('are never returned, never logged, and stored only as ciphertext', async () => {
    const tenant = await svc.tenant();
    const value = `sk-live-${randomUUID()}`;
    const other = `pw-${randomUUID()}`;
    const answers: string[] = [];
    const seen = async <T extends { text: string }>(p: Promise<T>) => {
      const res = await p;
      answers.push(res.text);
      return res;
    };
    const v2 = client(gw.url, tenant, '/v2');
    const hosted = client(gw.url, tenant, '/api-host/v2');

    const created = (
      await seen(
        v2.post(
          '/deployments',
          imageBody({
            secrets: [
              { name: 'OPENAI_API_KEY', value },
              { name: 'DB_PASSWORD', value: other },
            ],
          }),
        ),
      )
    ).json;
    expect(created.secrets).toEqual([{ name: 'OPENAI_API_KEY' }, { name: 'DB_PASSWORD' }]);
    await waitForRevision(v2, created.id, created.latest_revision_id);
    for (const api of [v2, hosted]) {
      expect((await seen(api.get(`/deployments/${created.id}`))).json.secrets).toEqual([
        { name: 'OPENAI_API_KEY' },
        { name: 'DB_PASSWORD' },
      ]);
      await seen(api.get('/deployments'));
      await seen(api.get(`/deployments/${created.id}/revisions`));
      await seen(api.get(`/deployments/${created.id}/revisions/${created.latest_revision_id}`));
    }
    const patched = (
      await seen(
        hosted.patch(`/deployments/${created.id}`, {
          secrets: [{ name: 'OPENAI_API_KEY', value: `${value}-rotated` }],
          source_revision_config: { image_uri: 'x/y:2' },
        }),
      )
    ).json;
    expect(patched.secrets).toEqual([{ name: 'OPENAI_API_KEY' }]);
    const invalid = await seen(v2.post('/deployments', imageBody({ secrets: [{ name: 'not a name', value }] })));
    expect(invalid.status).toBe(422);
    await waitForRevision(v2, created.id, patched.latest_revision_id);

    for (const text of answers) {
      expect(text).not.toContain(value);
      expect(text).not.toContain(other);
      expect(text).not.toContain('ciphertext');
    }
    const logs = svc.logs.raw() + gw.logs.raw();
    expect(svc.logs.raw()).toContain(created.id); // the service did log about this deployment
    expect(logs).not.toContain(value);
    expect(logs).not.toContain(other);

    const stored: string[] = [];
    for (const key of await keysByPrefix(redis, PREFIX)) {
      const type = await redis.type(key);
      if (type === 'string') stored.push((await redis.get(key))!);
      else if (type === 'set') stored.push(...(await redis.smembers(key)));
      else if (type === 'zset') stored.push(...(await redis.zrange(key, 0, -1)));
    }
    const all = stored.join('\n');
    expect(all).not.toContain(value);
    expect(all).not.toContain(other);
    const record = JSON.parse((await redis.get(`${PREFIX}:us:dep:${created.id}`))!);
    expect(record.secrets).toEqual([
      { name: 'OPENAI_API_KEY', ciphertext: expect.stringMatching(/^v1\.[\w-]{8}\.[\w-]{16}\.[\w-]{22}\.[\w-]+$/) },
    ]);

    // Only the process that runs the deployment opens them, with the right key.
    expect(await svc.cp.service.secretValues(tenant.workspace, created.id)).toEqual({
      OPENAI_API_KEY: `${value}-rotated`,
    });
    const wrongKey = await startControlPlane({ ...env, SECRETS_KEY: Buffer.alloc(32, 9).toString('base64') });
    try {
      const err = await wrongKey.cp.service.secretValues(tenant.workspace, created.id).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SecretError);
      expect((err as Error).message).toMatch(/sealed with another key .*check SECRETS_KEY/);
    } finally {
      await wrongKey.close();
    }
  });

  it('a ciphertext moved to another deployment does not open', async () => {
    const tenant = await svc.tenant();
    const api = client(svc.url, tenant);
    const a = (await api.post('/deployments', imageBody({ secrets: [{ name: 'K', value: 'alpha' }] }))).json;
    const b = (await api.post('/deployments', imageBody({ secrets: [{ name: 'K', value: 'beta' }] }))).json;
    const recA = JSON.parse((await redis.get(`${PREFIX}:us:dep:${a.id}`))!);
    const recB = JSON.parse((await redis.get(`${PREFIX}:us:dep:${b.id}`))!);
    await redis.set(`${PREFIX}:us:dep:${b.id}`, JSON.stringify({ ...recB, secrets: recA.secrets }));
    await expect(svc.cp.service.secretValues(tenant.workspace, b.id)).rejects.toThrow(/altered or not for this owner/);
    expect(await svc.cp.service.secretValues(tenant.workspace, a.id)).toEqual({ K: 'alpha' });
  });
});
