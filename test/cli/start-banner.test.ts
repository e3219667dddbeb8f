import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { developmentKeyBanner } from '../../src/keys/bootstrap.ts';
import { deleteByPrefix } from '../helpers/redis-keys.ts';
import { SHARED_REDIS_URL, sharedRedis } from '../helpers/shared-redis.ts';

/**
 * Issue 28, keys: the start banner suggested `gateway keys create`, which refuses without REDIS_URL; and a start on a
 * Redis whose registry already held keys printed no development key and nothing saying why.
 */

/** Runs `gateway start` until it is listening, stops it, and returns what it printed on stdout. */
function startOnce(env: NodeJS.ProcessEnv): Promise<string> {
  const base: NodeJS.ProcessEnv = { ...process.env, PORT: '0', ADMIN_PORT: '0', DRAIN_SECONDS: '0', ...env };
  for (const name of ['CONTROL_PLANE_URL', 'AGENT_SERVER_URL', 'REDIS_CLUSTER_NODES', 'NODE_ENV', 'API_KEYS_PREFIX'])
    delete base[name];
  if (env.REDIS_URL === undefined) delete base.REDIS_URL;
  const child = spawn(process.execPath, ['bin/gateway.js', 'start'], { env: base, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
      if (stdout.includes('"gateway listening"')) child.kill('SIGTERM');
    });
    child.on('close', (code) =>
      stdout.includes('"gateway listening"')
        ? resolve(stdout)
        : reject(new Error(`gateway start exited ${code} before listening: ${stderr}${stdout}`)),
    );
  });
}

/** The lines a person reads: what is not a JSON log line. */
const banner = (stdout: string) => stdout.split('\n').filter((l) => l !== '' && !l.startsWith('{'));

describe('the start banner', () => {
  it('with the memory store: a development key, and no `gateway keys create` offered without REDIS_URL', async () => {
    const lines = banner(await startOnce({}));
    expect(lines[0]).toBe('Development API key (shown once, only its hash is stored):');
    expect(lines.some((l) => /X-Api-Key: gwk_/.test(l))).toBe(true);
    expect(lines.join('\n')).not.toContain('Create more with');
    // The command is named only together with what it needs.
    for (const line of lines.filter((l) => l.includes('gateway keys create'))) expect(line).toContain('REDIS_URL');
  });

  describe('on Redis', () => {
    const namespace = `start-banner-test-${randomBytes(6).toString('hex')}`;
    const redis = sharedRedis();
    afterAll(async () => {
      await deleteByPrefix(redis, `${namespace}:`);
      redis.disconnect();
    });

    it('first start: the key and `gateway keys create`; next start: one line saying why no key is printed', async () => {
      const env = { REDIS_URL: SHARED_REDIS_URL, REDIS_PREFIX: namespace };
      const first = banner(await startOnce(env));
      expect(first.some((l) => /X-Api-Key: gwk_/.test(l))).toBe(true);
      expect(first.at(-1)).toBe('Create more with: gateway keys create --org <org> --workspace <workspace>');

      const second = banner(await startOnce(env));
      expect(second).toEqual([
        `No development API key printed: the key registry in Redis (prefix "${namespace}:keys") already holds keys. Create more with: gateway keys create --org <org> --workspace <workspace>`,
      ]);
    });
  });
});

describe('the banner offers `gateway keys create` only where it works, and says why no key is printed', () => {
  const dev = { key: 'gwk_x', org: 'default', workspace: 'default' };
  const memory = { kind: 'memory' as const, prefix: 'keys' };
  it('memory store with ADMIN_TOKEN: the command (it reaches the admin listener); without: what to set', () => {
    expect(
      developmentKeyBanner(dev, { ...memory, admin: true }, true)!
        .split('\n')
        .at(-1),
    ).toContain(
      "Create more with: gateway keys create --org <org> --workspace <workspace>    (with this gateway's ADMIN_TOKEN",
    );
    const without = developmentKeyBanner(dev, memory, true)!.split('\n').at(-1)!;
    expect(without).not.toContain('Create more with');
    expect(without).toContain('start the gateway with ADMIN_TOKEN=<a secret>');
  });
  it('NODE_ENV=production: one line saying why no key is printed, on every store', () => {
    for (const place of [memory, { ...memory, admin: true }, { kind: 'redis' as const, prefix: 'keys' }]) {
      const line = developmentKeyBanner(null, place, false)!;
      expect(line).toMatch(/^No development API key printed: NODE_ENV=production makes none/);
      expect(line).not.toContain('\n');
    }
    expect(developmentKeyBanner(null, memory, false)).toContain('no key can be made');
  });
});
