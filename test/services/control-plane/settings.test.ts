import { describe, expect, it } from 'vitest';
import { loadControlPlaneSettings } from '../../../src/services/control-plane/settings.ts';
import { SettingsError } from '../../../src/settings/env.ts';
import { client, imageBody, startControlPlane } from './helpers.ts';

/** The control plane's settings: defaults, each variable's errors, and their effect at start. */

describe('control plane settings', () => {
  it('has documented defaults', () => {
    const s = loadControlPlaneSettings({});
    expect(s).toMatchObject({
      region: 'us',
      redisUrl: null,
      storePrefix: 'cp',
      keysPrefix: 'keys',
      secretsKey: null,
      buildDelayMs: 0,
      buildConcurrency: 2,
      gitTimeoutMs: 60_000,
      development: true,
      localRepos: true,
    });
    expect(
      loadControlPlaneSettings({
        BUILD_DELAY_SECONDS: '180',
        SECRETS_KEY: Buffer.alloc(32, 1).toString('base64'),
        NODE_ENV: 'production',
      }),
    ).toMatchObject({
      buildDelayMs: 180_000,
      secretsKey: Buffer.alloc(32, 1),
      development: false,
      localRepos: false,
    });
    expect(loadControlPlaneSettings({ NODE_ENV: 'production', LOCAL_REPOS: 'allow' }).localRepos).toBe(true);
    expect(loadControlPlaneSettings({ LOCAL_REPOS: 'deny' }).localRepos).toBe(false);
  });

  it('build limits: NODE_MODULES_MAX_MB and BUILD_CONCURRENCY_PER_TENANT, defaults and errors', () => {
    expect(loadControlPlaneSettings({})).toMatchObject({
      nodeModulesMaxBytes: 2048 * 1024 * 1024,
      buildConcurrencyPerTenant: 1,
    });
    expect(loadControlPlaneSettings({ NODE_MODULES_MAX_MB: '300', BUILD_CONCURRENCY_PER_TENANT: '2' })).toMatchObject({
      nodeModulesMaxBytes: 300 * 1024 * 1024,
      buildConcurrencyPerTenant: 2,
    });
    for (const [name, value] of [
      ['NODE_MODULES_MAX_MB', '0'],
      ['NODE_MODULES_MAX_MB', 'lots'],
      ['BUILD_CONCURRENCY_PER_TENANT', '0'],
    ])
      expect(() => loadControlPlaneSettings({ [name!]: value! })).toThrow(name);
  });

  it('deployment settings: defaults, values, and errors naming the variable', () => {
    expect(loadControlPlaneSettings({})).toMatchObject({
      deploymentMemoryMb: 512,
      loadTimeoutMs: 60_000,
      installTimeoutMs: 600_000,
      keepBuilds: 3,
      pushPollMs: 60_000,
      drainMs: 10_000,
      deploymentDataPrefix: 'deployment',
      publicUrl: null,
      deploymentsDomain: null,
      edgePort: 8080,
      revisionAgentServer: { ttlSweepMs: 60_000, webhookHostsAllowed: [] },
      revisionRedis: {
        maxConnections: 16,
        idleMs: 300_000,
        maxRequestBytes: 16 * 1024 * 1024,
        maxBytes: 256 * 1024 * 1024,
        measureMs: 30_000,
      },
    });
    expect(
      loadControlPlaneSettings({
        DEPLOYMENT_MEMORY_MB: '256',
        KEEP_BUILDS: '5',
        BUILD_ON_PUSH_INTERVAL_SECONDS: '1',
        DRAIN_SECONDS: '3',
        PUBLIC_URL: 'https://gw.example.com',
        DEPLOYMENTS_DOMAIN: 'Apps.Example.com',
        PORT: '9000',
        TTL_SWEEP_SECONDS: '0.5',
        WEBHOOK_HOSTS_ALLOWED: 'hooks.internal:8443,10.0.0.0/8',
        DEPLOYMENT_REDIS_CONNECTIONS: '4',
        DEPLOYMENT_REDIS_MAX_MB: '64',
      }),
    ).toMatchObject({
      deploymentMemoryMb: 256,
      keepBuilds: 5,
      pushPollMs: 1000,
      drainMs: 3000,
      publicUrl: 'https://gw.example.com',
      deploymentsDomain: 'apps.example.com',
      edgePort: 9000,
      revisionAgentServer: { ttlSweepMs: 500, webhookHostsAllowed: ['hooks.internal:8443', '10.0.0.0/8'] },
      revisionRedis: { maxConnections: 4, maxBytes: 64 * 1024 * 1024 },
    });
    for (const [name, value] of [
      ['DEPLOYMENT_MEMORY_MB', '10'],
      ['KEEP_BUILDS', '0'],
      ['DEPLOYMENTS_DOMAIN', 'not a domain'],
      ['DEPLOYMENT_DATA_PREFIX', 'has:colon'],
      ['PUBLIC_URL', 'ftp://x'],
      ['TTL_SWEEP_SECONDS', '0'],
      ['WEBHOOK_HOSTS_ALLOWED', 'http://x/'],
      ['DEPLOYMENT_REDIS_CONNECTIONS', '0'],
      ['DEPLOYMENT_REDIS_MAX_MB', 'lots'],
    ] as const) {
      expect(() => loadControlPlaneSettings({ [name]: value }), name).toThrow(SettingsError);
      expect(() => loadControlPlaneSettings({ [name]: value }), name).toThrow(name);
    }
  });

  it('reads the key registry prefix from API_KEYS_PREFIX; the old KEYS_PREFIX still works, with a warning', () => {
    expect(loadControlPlaneSettings({ API_KEYS_PREFIX: 'new-keys' })).toMatchObject({
      keysPrefix: 'new-keys',
      keysPrefixWarning: null,
    });
    expect(loadControlPlaneSettings({ KEYS_PREFIX: 'old-keys' })).toMatchObject({
      keysPrefix: 'old-keys',
      keysPrefixWarning: 'KEYS_PREFIX is deprecated: use API_KEYS_PREFIX instead',
    });
    expect(loadControlPlaneSettings({ API_KEYS_PREFIX: 'new-keys', KEYS_PREFIX: 'old-keys' })).toMatchObject({
      keysPrefix: 'new-keys',
      keysPrefixWarning: 'KEYS_PREFIX is deprecated and ignored (API_KEYS_PREFIX is set): remove it',
    });
    expect(() => loadControlPlaneSettings({ API_KEYS_PREFIX: 'a b' })).toThrow(/^API_KEYS_PREFIX: must be 1-128/);
    expect(() => loadControlPlaneSettings({ KEYS_PREFIX: 'a b' })).toThrow(/^KEYS_PREFIX: must be 1-128/);
  });

  it('logs the KEYS_PREFIX deprecation once at start, naming the variable to use', async () => {
    const cp = await startControlPlane({ KEYS_PREFIX: 'old-keys' });
    try {
      const line = await cp.logs.waitFor((l) => typeof l.msg === 'string' && l.msg.includes('KEYS_PREFIX'));
      expect(line).toMatchObject({ level: 40, msg: 'KEYS_PREFIX is deprecated: use API_KEYS_PREFIX instead' });
      expect(cp.logs.lines().filter((l) => String(l.msg).includes('KEYS_PREFIX'))).toHaveLength(1);
    } finally {
      await cp.close();
    }
    const quiet = await startControlPlane({ API_KEYS_PREFIX: 'new-keys' });
    await quiet.close();
    expect(quiet.logs.raw()).not.toContain('KEYS_PREFIX');
  });

  it.each([
    ['SECRETS_KEY', 'c2hvcnQ='],
    ['SECRETS_KEY', 'not base64!'],
    ['BUILD_DELAY_SECONDS', '-1'],
    ['LOCAL_REPOS', 'sometimes'],
    ['BUILD_DELAY_SECONDS', 'soon'],
    ['BUILD_CONCURRENCY', '0'],
    ['REGION', 'mars'],
    ['REDIS_URL', 'http://localhost'],
    ['CONTROL_PLANE_PREFIX', 'has space'],
    ['DEPLOYMENT_URL', 'ftp://x'],
  ])('fails naming %s for %j', (variable, value) => {
    const err = (() => {
      try {
        loadControlPlaneSettings({ [variable]: value });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(SettingsError);
    expect((err as SettingsError).variable).toBe(variable);
    expect((err as Error).message.startsWith(`${variable}: `)).toBe(true);
  });
});

describe('DEPLOYMENT_URL', () => {
  it('gives each deployment its url (`{id}` replaced); unset, url is null', async () => {
    const svc = await startControlPlane({ DEPLOYMENT_URL: 'https://agents.example.com/d/{id}' });
    try {
      const d = (await client(svc.url, await svc.tenant()).post('/deployments', imageBody())).json;
      expect(d.url).toBe(`https://agents.example.com/d/${d.id}`);
    } finally {
      await svc.close();
    }
  });
});
