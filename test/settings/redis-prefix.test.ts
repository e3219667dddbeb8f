import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { SettingsError } from '../../src/settings/env.ts';
import { loadKeyRegistrySettings } from '../../src/settings/key-registry.ts';
import { loadSettings } from '../../src/settings/settings.ts';
import { deleteByPrefix, keysByPrefix } from '../helpers/redis-keys.ts';
import { SHARED_REDIS_URL, sharedRedis } from '../helpers/shared-redis.ts';

/** Issue 28: a shared Redis took six prefix variables and had no one namespace setting. */

/** The six stores' prefixes as `gateway start` reads them. */
function prefixes(env: Record<string, string>) {
  const s = loadSettings(env);
  return {
    buckets: s.keyPrefix,
    routes: s.routesPrefix,
    keys: s.bundled.keys!.prefix,
    controlPlane: s.bundled.controlPlane!.storePrefix,
    controlPlaneKeys: s.bundled.controlPlane!.keysPrefix,
    controlPlaneRoutes: s.bundled.controlPlane!.routesPrefix,
    deploymentData: s.bundled.controlPlane!.deploymentDataPrefix,
    agent: s.bundled.agentServer!.storePrefix,
  };
}

describe('REDIS_PREFIX', () => {
  it('unset: every store keeps the default it always had', () => {
    expect(prefixes({})).toEqual({
      buckets: 'rl',
      routes: 'routes',
      keys: 'keys',
      controlPlane: 'cp',
      controlPlaneKeys: 'keys',
      controlPlaneRoutes: 'routes',
      deploymentData: 'deployment',
      agent: 'agent',
    });
  });

  it('set: every store is under it, and `gateway keys create` reads the registry where the gateway writes it', () => {
    expect(prefixes({ REDIS_PREFIX: 'team-a' })).toEqual({
      buckets: 'team-a:rl',
      routes: 'team-a:routes',
      keys: 'team-a:keys',
      controlPlane: 'team-a:cp',
      controlPlaneKeys: 'team-a:keys',
      controlPlaneRoutes: 'team-a:routes',
      deploymentData: 'team-a:deployment',
      agent: 'team-a:agent',
    });
    expect(loadKeyRegistrySettings({ REDIS_PREFIX: 'team-a' }).prefix).toBe('team-a:keys');
  });

  it("each store's own variable still overrides it, taken as given (KEYS_PREFIX, the old name, too)", () => {
    const p = prefixes({
      REDIS_PREFIX: 'team-a',
      KEY_PREFIX: 'buckets',
      ROUTES_PREFIX: 'r',
      API_KEYS_PREFIX: 'k',
      CONTROL_PLANE_PREFIX: 'c',
      AGENT_STORE_PREFIX: 'a',
      DEPLOYMENT_DATA_PREFIX: 'd',
    });
    expect(p).toEqual({
      buckets: 'buckets',
      routes: 'r',
      keys: 'k',
      controlPlane: 'c',
      controlPlaneKeys: 'k',
      controlPlaneRoutes: 'r',
      deploymentData: 'd',
      agent: 'a',
    });
    const old = loadKeyRegistrySettings({ REDIS_PREFIX: 'team-a', KEYS_PREFIX: 'legacy' });
    expect(old.prefix).toBe('legacy');
    expect(old.warning).toMatch(/KEYS_PREFIX/);
    // Only the one named: the others stay under the namespace.
    expect(prefixes({ REDIS_PREFIX: 'team-a', KEY_PREFIX: 'buckets' }).routes).toBe('team-a:routes');
  });

  it('an invalid value fails at load naming REDIS_PREFIX', () => {
    for (const bad of ['a:b', 'has space', 'x'.repeat(33), 'a{b}']) {
      expect(() => loadSettings({ REDIS_PREFIX: bad })).toThrow(SettingsError);
      expect(() => loadSettings({ REDIS_PREFIX: bad })).toThrow(/^REDIS_PREFIX: /);
    }
    // A blank value is unset.
    expect(prefixes({ REDIS_PREFIX: ' ' }).buckets).toBe('rl');
  });
});

describe('REDIS_PREFIX as the programs read it', () => {
  const run = promisify(execFile);
  const namespace = `redis-prefix-test-${randomBytes(6).toString('hex')}`;
  const redis = sharedRedis();
  afterAll(async () => {
    await deleteByPrefix(redis, `${namespace}:`);
    redis.disconnect();
  });

  it('gateway explain shows the bucket keys under it', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, REDIS_PREFIX: namespace };
    delete env.KEY_PREFIX;
    const { stdout } = await run(process.execPath, ['bin/gateway.js', 'explain', 'GET', '/runs/stats', '--json'], {
      env,
    });
    const keys = (JSON.parse(stdout) as { limits: { key: string }[] }).limits.map((l) => l.key);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(key.startsWith(`${namespace}:rl:us:`)).toBe(true);
  });

  it('gateway keys create writes the registry under it in Redis', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, REDIS_URL: SHARED_REDIS_URL, REDIS_PREFIX: namespace };
    for (const name of ['API_KEYS_PREFIX', 'KEYS_PREFIX']) delete env[name];
    // Before writing anything: a reader that ignored REDIS_PREFIX would write the shared Redis' own `keys:`.
    expect(loadKeyRegistrySettings(env).prefix).toBe(`${namespace}:keys`);
    const { stdout } = await run(
      process.execPath,
      ['bin/gateway.js', 'keys', 'create', '--org', 'acme', '--workspace', 'acme-ws'],
      { env },
    );
    expect(stdout.trim()).toMatch(/^gwk_/);
    expect(await redis.get(`${namespace}:keys:ws:acme-ws`)).toBe('acme');
    expect((await keysByPrefix(redis, `${namespace}:`)).every((k) => k.startsWith(`${namespace}:keys:`))).toBe(true);
  });
});
