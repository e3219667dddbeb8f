import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limitsCommand } from '../../src/cli/limits.ts';
import { main } from '../../src/cli/main.ts';
import { rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { closedPort, startUpstream, type TestUpstream } from '../helpers/upstream.ts';

/** `gateway limits set|list|unset` against a running gateway's admin listener, and `gateway explain --org`. */

const TOKEN = `op-${randomBytes(12).toString('hex')}`;
const RULES = `
guards:
  - { id: runs, by: api-key, concurrent: 3, category: Runs, match: { method: POST, path: /runs } }
rules:
  - id: api
    match: { path: /api }
    limits:
      - { by: api-key, count: 10, per: 1m, category: Api }
`;

let upstream: TestUpstream;
let rules: ReturnType<typeof rulesDir>;
let gw: TestGateway;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  rules = rulesDir(RULES);
  upstream = await startUpstream((req, res) => void (req.resume(), res.end('ok')));
  gw = await startTestGateway({
    RULES_DIR: rules.dir,
    ADMIN_TOKEN: TOKEN,
    AGENT_SERVER_URL: upstream.url,
    CONTROL_PLANE_URL: upstream.url,
  });
  env = { ADMIN_TOKEN: TOKEN, ADMIN_PORT: String(gw.gateway.admin.port) };
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
  rules?.remove();
});

async function limits(args: string[], given: NodeJS.ProcessEnv = env) {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const code = await limitsCommand(args, { log: (l) => stdout.push(l), err: (l) => stderr.push(l) }, given);
  return { code, stdout: stdout.join('\n'), stderr: stderr.join('\n') };
}

describe('gateway limits', () => {
  it('sets, lists and unsets an organisation’s overrides', async () => {
    expect(await limits(['set', '--org', 'acme', 'api.api-key', '--count', '50', '--per', '10s'])).toMatchObject({
      code: 0,
      stderr: 'organisation "acme": api.api-key is now 50 per 10s',
    });
    expect((await limits(['set', '--org', 'acme', 'guard.runs', '--concurrent', '8'])).code).toBe(0);
    expect((await limits(['set', '--org', 'beta', 'api.api-key', '--count', '5'])).code).toBe(0);
    expect(gw.gateway.overrides.of('acme')).toEqual({
      'api.api-key': { count: 50, perSeconds: 10 },
      'guard.runs': { concurrent: 8 },
    });

    const listed = await limits(['list']);
    expect(listed.code).toBe(0);
    expect(listed.stdout.split('\n')).toEqual([
      'acme  api.api-key  50 per 10s',
      'acme  guard.runs  8 in flight',
      "beta  api.api-key  5 per the rule's period",
    ]);
    const json = JSON.parse((await limits(['list', '--org', 'acme', '--json'])).stdout) as unknown;
    expect(json).toEqual({
      overrides: { acme: { 'api.api-key': { count: 50, per_seconds: 10 }, 'guard.runs': { concurrent: 8 } } },
    });

    expect(await limits(['unset', '--org', 'acme', 'guard.runs'])).toMatchObject({ code: 0 });
    expect(gw.gateway.overrides.of('acme')).toEqual({ 'api.api-key': { count: 50, perSeconds: 10 } });
    expect((await limits(['unset', '--org', 'beta'])).stderr).toContain('removed 1 override(s)');
    expect(gw.gateway.overrides.of('beta')).toBeUndefined();
  });

  it('refuses bad overrides with one line and exit 1, usage mistakes with exit 2', async () => {
    const unknown = await limits(['set', '--org', 'acme', 'nope.ip', '--count', '5']);
    expect(unknown).toMatchObject({ code: 1 });
    expect(unknown.stderr).toMatch(/^gateway limits set: .*No limit of the rules in force is named "nope.ip"$/);
    expect((await limits(['set', '--org', 'acme', 'api.api-key', '--count', '0'])).code).toBe(1);
    expect((await limits(['set', '--org', 'acme', 'guard.runs', '--count', '4'])).stderr).toContain('in-flight');
    expect((await limits(['set', 'api.api-key', '--count', '5'])).code).toBe(2);
    expect((await limits(['set', '--org', 'acme', 'api.api-key', '--count', 'many'])).code).toBe(2);
    expect((await limits(['list'], { ADMIN_PORT: env.ADMIN_PORT })).stderr).toContain('ADMIN_TOKEN is not set');
    const down = await limits(['list', '--admin-url', `http://127.0.0.1:${await closedPort()}`]);
    expect(down.code).toBe(2);
    expect(down.stderr).toContain('cannot reach');
  });

  it('explain --org shows the organisation’s numbers (from the admin listener without REDIS_URL)', async () => {
    expect((await limits(['set', '--org', 'acme', 'api.api-key', '--count', '77'])).code).toBe(0);
    const stdout: string[] = [];
    const stderr: string[] = [];
    const saved = { ...process.env };
    Object.assign(process.env, env);
    try {
      const code = await main(
        ['explain', 'GET', '/api', '-H', 'x-api-key: k', '--org', 'acme', '--rules-dir', rules.dir, '--json'],
        { log: (l) => stdout.push(l), err: (l) => stderr.push(l) },
      );
      expect(stderr).toEqual([]);
      expect(code).toBe(0);
    } finally {
      process.env = saved;
    }
    const shown = JSON.parse(stdout.join('\n')) as { limits: Record<string, unknown>[] };
    expect(shown.limits[0]).toMatchObject({ policy: 'api.api-key', count: 77, per_seconds: 60, plan: 'acme' });
  });
});
