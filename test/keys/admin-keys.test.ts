import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keysCommand } from '../../src/cli/keys.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

/**
 * Issue 28, keys: on the memory store there was no way to a second key (`gateway keys create` refused without
 * REDIS_URL), and no `keys list` / `keys revoke`. Now `gateway keys` reaches a running gateway's registry, whatever
 * its store, through the admin listener's /keys with the operator token (ADMIN_TOKEN).
 */

const TOKEN = 'operator-secret-for-keys-test';
let gw: TestGateway;
let bare: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ ADMIN_TOKEN: TOKEN, NODE_ENV: 'test' });
  bare = await startTestGateway({ NODE_ENV: 'test' });
});
afterAll(async () => {
  await gw?.close();
  await bare?.close();
});

const adminUrl = (g: TestGateway) => `http://127.0.0.1:${g.gateway.admin.port}`;

async function run(args: string[], env: Record<string, string>) {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const code = await keysCommand(args, { log: (l) => stdout.push(l), err: (l) => stderr.push(l) }, { env });
  return { code, stdout: stdout.join('\n'), stderr: stderr.join('\n') };
}

/** What the control plane answers a key for a workspace. */
async function controlPlaneStatus(key: string, workspace: string): Promise<number> {
  const res = await fetch(`${gw.url}/v2/deployments`, { headers: { 'x-api-key': key, 'x-tenant-id': workspace } });
  await res.arrayBuffer();
  return res.status;
}

describe('gateway keys against a running gateway on the memory store', () => {
  it('create, list (ids only), revoke: the key works, is listed without its secret, then is refused', async () => {
    const env = { ADMIN_TOKEN: TOKEN };
    const at = ['--admin-url', adminUrl(gw)];
    const made = await run(['create', '--org', 'acme', '--workspace', 'acme-ws', ...at], env);
    expect(made.code, made.stderr).toBe(0);
    const key = made.stdout;
    expect(key).toMatch(/^gwk_[A-Za-z0-9_-]{43}$/);
    expect(made.stderr).toMatch(
      /^created key (key_\w+) of organisation "acme" \(workspace "acme-ws"\) in the admin listener/,
    );
    const id = /created key (\S+)/.exec(made.stderr)![1]!;
    expect(await controlPlaneStatus(key, 'acme-ws')).toBe(200);

    const second = await run(['create', '--org', 'globex', '--workspace', 'globex-ws', '--json', ...at], env);
    expect(JSON.parse(second.stdout)).toMatchObject({ org: 'globex', workspace: 'globex-ws', key: expect.any(String) });

    const listed = await run(['list', '--json', ...at], env);
    expect(listed.code).toBe(0);
    const keys = (JSON.parse(listed.stdout) as { keys: { id: string; org: string }[] }).keys;
    expect(keys.map((k) => k.id)).toContain(id);
    expect(listed.stdout).not.toContain(key.slice(4));
    expect(listed.stdout).not.toContain(JSON.parse(second.stdout).key.slice(4));
    const acme = await run(['list', '--org', 'acme', ...at], env);
    expect(acme.stdout.split('\n')).toEqual([expect.stringMatching(new RegExp(`^${id}  acme  \\d{4}-`))]);

    const revoked = await run(['revoke', id, ...at], env);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stderr).toContain(`revoked key ${id} of organisation "acme"`);
    expect(await controlPlaneStatus(key, 'acme-ws')).toBe(401);
    const again = await run(['revoke', id, ...at], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`No API key has id "${id}"`);
  });

  it('a workspace of another organisation: exit 1, the reason in one line', async () => {
    const at = ['--admin-url', adminUrl(gw)];
    expect((await run(['create', '--org', 'a1', '--workspace', 'taken-ws', ...at], { ADMIN_TOKEN: TOKEN })).code).toBe(
      0,
    );
    const r = await run(['create', '--org', 'b1', '--workspace', 'taken-ws', ...at], { ADMIN_TOKEN: TOKEN });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('belongs to another organisation');
    expect(r.stderr.split('\n')).toHaveLength(1);
  });

  it('the operator token is required: 401 without it, exit 2 naming ADMIN_TOKEN', async () => {
    const raw = await fetch(`${adminUrl(gw)}/keys`, { method: 'POST', body: '{"org":"x","workspace":"y"}' });
    expect(raw.status).toBe(401);
    expect(((await raw.json()) as { code: string }).code).toBe('admin_token_required');
    const wrong = await run(['list', '--admin-url', adminUrl(gw)], { ADMIN_TOKEN: 'not-it' });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('ADMIN_TOKEN');
    const none = await run(['list', '--admin-url', adminUrl(gw)], {});
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('ADMIN_TOKEN is not set');
  });

  it('a gateway started without ADMIN_TOKEN answers 403 saying how to turn key management on', async () => {
    const raw = await fetch(`${adminUrl(bare)}/keys`, { headers: { authorization: 'Bearer anything' } });
    expect(raw.status).toBe(403);
    expect(((await raw.json()) as { detail: string }).detail).toContain('ADMIN_TOKEN');
    const r = await run(['list', '--admin-url', adminUrl(bare)], { ADMIN_TOKEN: 'anything' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('start the gateway with ADMIN_TOKEN');
  });

  it('neither REDIS_URL nor ADMIN_TOKEN, or no gateway listening: exit 2, one line saying what to set', async () => {
    const nothing = await run(['create', '--org', 'a', '--workspace', 'w'], {});
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toMatch(/REDIS_URL is not set and neither is ADMIN_TOKEN/);
    expect(nothing.stderr.split('\n')).toHaveLength(1);
    const closed = await run(['list', '--admin-url', 'http://127.0.0.1:1'], { ADMIN_TOKEN: TOKEN });
    expect(closed.code).toBe(2);
    expect(closed.stderr).toMatch(/cannot reach the gateway's admin listener at http:\/\/127.0.0.1:1/);
    expect((await run(['revoke'], {})).code).toBe(2);
  });
});
