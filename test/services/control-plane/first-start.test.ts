import { afterAll, describe, expect, it } from 'vitest';
import { describeDevelopmentKey } from '../../../src/keys/bootstrap.ts';
import { deleteByPrefix } from '../../helpers/redis-keys.ts';
import { client, imageBody, startControlPlane } from './helpers.ts';
import { SHARED_REDIS_URL, sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';

describe('first start in development', () => {
  const RUN = uniquePrefix('test:cp-dev');
  const redis = sharedRedis();
  afterAll(async () => {
    await deleteByPrefix(redis, RUN);
    await redis.quit();
  });

  it('an empty registry gets one development key, returned once and never logged; it works; the next start makes none', async () => {
    const env = {
      REDIS_URL: SHARED_REDIS_URL,
      CONTROL_PLANE_PREFIX: RUN,
      API_KEYS_PREFIX: `${RUN}:keys`,
      NODE_ENV: 'development',
    };
    const first = await startControlPlane(env);
    try {
      const dev = first.cp.devKey!;
      expect(dev).toMatchObject({ org: 'default', workspace: 'default', key: expect.stringMatching(/^gwk_/) });
      expect(describeDevelopmentKey(dev)).toContain(`X-Api-Key: ${dev.key}`);
      expect(describeDevelopmentKey(dev)).toContain('X-Tenant-Id: default');
      await first.logs.waitFor((l) => typeof l.msg === 'string' && l.msg.includes('development API key'));
      expect(first.logs.raw()).not.toContain(dev.key);
      expect((await client(first.url, dev).post('/deployments', imageBody())).status).toBe(201);
    } finally {
      await first.close();
    }
    const second = await startControlPlane(env);
    await second.close();
    expect(second.cp.devKey).toBeNull();
  });

  it('production makes no key; an unset SECRETS_KEY and a key registry in memory (no key can ever exist) are warned about', async () => {
    const prod = await startControlPlane({ NODE_ENV: 'production', SECRETS_KEY: '' });
    try {
      expect(prod.cp.devKey).toBeNull();
      const warning = await prod.logs.waitFor(
        (l) => typeof l.msg === 'string' && l.msg.startsWith('SECRETS_KEY is unset'),
      );
      expect(warning.level).toBe(40);
      const noKeys = await prod.logs.waitFor(
        (l) => typeof l.msg === 'string' && l.msg.startsWith('the key registry is in memory'),
      );
      expect(noKeys).toMatchObject({ level: 40, msg: expect.stringContaining('REDIS_URL') });
    } finally {
      await prod.close();
    }
  });
});
