import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { keysCommand } from '../../src/cli/keys.ts';
import { RedisKeyRegistry } from '../../src/keys/redis-registry.ts';
import { deleteByPrefix, keysByPrefix } from '../helpers/redis-keys.ts';
import { registryContract } from './contract.ts';
import { SHARED_REDIS_URL, sharedRedis, uniquePrefix } from '../helpers/shared-redis.ts';

/** The shared Redis, only under a unique prefix, removed afterwards. */
const RUN = uniquePrefix('test:keys');
const shared = sharedRedis();

afterAll(async () => {
  await deleteByPrefix(shared, RUN);
  await shared.quit();
});

registryContract('redis', async () => {
  const prefix = `${RUN}:${randomUUID()}`;
  const other = sharedRedis();
  return {
    registry: new RedisKeyRegistry(shared, { prefix }),
    peer: new RedisKeyRegistry(other, { prefix, ownsClient: true }),
    async rawValues() {
      const keys = await keysByPrefix(shared, prefix);
      const values: string[] = [...keys];
      for (const k of keys) {
        const type = await shared.type(k);
        if (type === 'string') values.push((await shared.get(k)) ?? '');
        if (type === 'set') values.push(...(await shared.smembers(k)));
      }
      return values;
    },
    async close() {
      await other.quit();
      await deleteByPrefix(shared, prefix);
    },
  };
});

describe('gateway keys create', () => {
  const run = async (args: string[], env: Record<string, string> = {}) => {
    const stdout: string[] = [];
    const stderr: string[] = [];
    const code = await keysCommand(args, { log: (l) => stdout.push(l), err: (l) => stderr.push(l) }, { env });
    return { code, stdout: stdout.join('\n'), stderr: stderr.join('\n') };
  };

  it('prints a new key once on stdout; the registry on REDIS_URL knows it and the workspace, by hash only', async () => {
    const prefix = `${RUN}:cli-${randomUUID()}`;
    const env = { REDIS_URL: SHARED_REDIS_URL, API_KEYS_PREFIX: prefix };
    const r = await run(['create', '--org', 'acme', '--workspace', 'ws-cli'], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^gwk_[A-Za-z0-9_-]{43}$/);
    expect(r.stderr).toMatch(/created key key_\w+ of organisation "acme" \(workspace "ws-cli"\)/);
    const registry = new RedisKeyRegistry(shared, { prefix });
    expect((await registry.findKey(r.stdout))?.org).toBe('acme');
    expect(await registry.workspaceOrg('ws-cli')).toBe('acme');
    const stored = await keysByPrefix(shared, prefix);
    for (const k of stored) expect(`${k} ${await shared.dump(k)}`).not.toContain(r.stdout.slice(4));

    const json = await run(['create', '--org', 'acme', '--workspace', 'ws-cli', '--json'], env);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      org: 'acme',
      workspace: 'ws-cli',
      key: expect.stringMatching(/^gwk_/),
    });
  });

  it('API_KEYS_PREFIX names the registry; the old KEYS_PREFIX still works, with one warning naming the new variable', async () => {
    const fresh = await run(['create', '--org', 'acme', '--workspace', 'ws-new-name'], {
      REDIS_URL: SHARED_REDIS_URL,
      API_KEYS_PREFIX: `${RUN}:cli-${randomUUID()}`,
    });
    expect(fresh.code).toBe(0);
    expect(fresh.stderr).not.toContain('deprecated');

    const prefix = `${RUN}:cli-${randomUUID()}`;
    const old = await run(['create', '--org', 'acme', '--workspace', 'ws-old-name'], {
      REDIS_URL: SHARED_REDIS_URL,
      KEYS_PREFIX: prefix,
    });
    expect(old.code).toBe(0);
    const warnings = old.stderr.split('\n').filter((l) => l.includes('deprecated'));
    expect(warnings).toEqual(['gateway keys create: KEYS_PREFIX is deprecated: use API_KEYS_PREFIX instead']);
    expect((await new RedisKeyRegistry(shared, { prefix }).findKey(old.stdout))?.org).toBe('acme');
  });

  it('exit 1 when the workspace belongs to another organisation', async () => {
    const env = { REDIS_URL: SHARED_REDIS_URL, API_KEYS_PREFIX: `${RUN}:cli-${randomUUID()}` };
    expect((await run(['create', '--org', 'acme', '--workspace', 'shared-ws'], env)).code).toBe(0);
    const r = await run(['create', '--org', 'globex', '--workspace', 'shared-ws'], env);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('belongs to another organisation');
  });

  it('exit 2 with the reason for usage errors, a missing REDIS_URL, and bad settings', async () => {
    const missing = await run(['create', '--org', 'acme']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--org and --workspace are required');
    const unknown = await run(['create', '--org', 'a', '--workspace', 'w', '--bogus']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/bogus/);
    const noRedis = await run(['create', '--org', 'acme', '--workspace', 'w']);
    expect(noRedis.code).toBe(2);
    expect(noRedis.stderr).toContain('REDIS_URL is not set');
    const badUrl = await run(['create', '--org', 'acme', '--workspace', 'w'], { REDIS_URL: 'http://x' });
    expect(badUrl.code).toBe(2);
    expect(badUrl.stderr).toContain('REDIS_URL');
    const badName = await run(['create', '--org', 'a b', '--workspace', 'w'], {
      REDIS_URL: SHARED_REDIS_URL,
      API_KEYS_PREFIX: `${RUN}:cli-bad`,
    });
    expect(badName.code).toBe(2);
    expect(badName.stderr).toContain('organisation must be');
    expect((await run([])).code).toBe(2);
    expect((await run(['--help'])).code).toBe(0);
  });
});
