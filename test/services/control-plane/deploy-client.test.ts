import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployClient, EXIT } from '../../../examples/deploy-client.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';
import { client, makeRepo, startControlPlane, type TestControlPlane, type TestRepo } from './helpers.ts';

/**
 * The example client (examples/deploy-client.ts) against the service
 * through the edge: the whole flow end to end as a CI job runs it (its own
 * process, 1 s polls), and each exit status a CI job relies on.
 */

let repo: TestRepo;
let svc: TestControlPlane;
let gw: TestGateway;

beforeAll(async () => {
  repo = makeRepo();
  repo.commit({ 'src/agent.ts': 'export const graph = { v: 2 };\n' }, 'v2');
  repo.git('tag', 'v2');
  svc = await startControlPlane({ BUILD_DELAY_SECONDS: '0' });
  gw = await startTestGateway({ CONTROL_PLANE_URL: svc.url });
});

afterAll(async () => {
  await gw?.close();
  await svc?.close();
  repo?.remove();
});

function runScript(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'examples/deploy-client.ts', ...args],
      { env: { ...process.env, ...env }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? -1) : 0, stdout, stderr }),
    );
  });
}

async function runInProcess(args: string[]) {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const code = await deployClient(args, {}, { log: (l) => stdout.push(l), err: (l) => stderr.push(l) });
  return { code, stdout: stdout.join('\n'), stderr: stderr.join('\n') };
}

describe('examples/deploy-client.ts', () => {
  it('deploys a local repository end to end through the edge: create, poll, patch, poll the latest, delete; exit 0', async () => {
    const tenant = await svc.tenant('client');
    const r = await runScript(
      [
        '--url',
        gw.url,
        '--repo-url',
        repo.dir,
        '--ref',
        'main',
        '--next-ref',
        'v2',
        '--poll-interval',
        '1',
        '--timeout',
        '30',
      ],
      {
        API_KEY: tenant.key,
        TENANT_ID: tenant.workspace,
      },
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    const created = /^created deployment=(\S+) revision=(\S+)$/.exec(lines[0]!);
    expect(created).not.toBeNull();
    const [, deploymentId, firstRev] = created!;
    const patched = lines.find((l) => l.startsWith('patched'))!;
    const secondRev = /revision=(\S+)$/.exec(patched)![1]!;
    expect(secondRev).not.toBe(firstRev);
    expect(lines).toContain(`status revision=${firstRev} DEPLOYED`);
    expect(lines).toContain(`deployed revision=${firstRev}`);
    expect(lines).toContain(`deployed revision=${secondRev}`);
    expect(lines.at(-2)).toBe(`deleted deployment=${deploymentId}`);
    expect(lines.at(-1)).toBe('result ok exit=0');
    expect(lines.indexOf(`deployed revision=${firstRev}`)).toBeLessThan(lines.indexOf(patched));
    // The build's steps, from its followed build log, before the revision is DEPLOYED.
    const clone = lines.findIndex((l) =>
      new RegExp(`^step revision=${firstRev} clone done in \\d+\\.\\d\\d s$`).test(l),
    );
    expect(clone, r.stdout).toBeGreaterThan(0);
    expect(lines.some((l) => l.startsWith(`step revision=${firstRev} config done in `))).toBe(true);
    expect(clone).toBeLessThan(lines.indexOf(`deployed revision=${firstRev}`));
    // It really went through the edge, and the deployment is gone.
    const deleted = await gw.logs.waitFor(
      (l) => l.msg === 'request' && l.status === 204 && typeof l.path === 'string' && l.path.includes(deploymentId!),
    );
    expect(deleted).toMatchObject({ method: 'DELETE', upstream: 'control-plane' });
    expect((await client(gw.url, tenant).get(`/deployments/${deploymentId}`)).status).toBe(404);
  });

  it('exit 1 with the reason when a revision fails (and the deployment is cleaned up)', async () => {
    const tenant = await svc.tenant('client');
    const r = await runInProcess([
      '--url',
      gw.url,
      '--api-key',
      tenant.key,
      '--tenant-id',
      tenant.workspace,
      '--repo-url',
      repo.url,
      '--ref',
      'missing',
      '--poll-interval',
      '0.05',
    ]);
    expect(r.code).toBe(EXIT.failed);
    expect(r.stderr).toMatch(/ended BUILD_FAILED: BUILD_FAILED: repo_ref: "missing" is not a branch, tag or commit/);
    expect(r.stdout).toMatch(/deleted deployment=\S+\nresult failed exit=1$/);
    expect((await client(gw.url, tenant).get('/deployments')).json.resources).toEqual([]);
  });

  it('exit 3 when a revision is not DEPLOYED in time; --keep leaves the deployment', async () => {
    const slow = await startControlPlane({ BUILD_DELAY_SECONDS: '30' });
    try {
      const tenant = await slow.tenant('client');
      const started = Date.now();
      const r = await runInProcess([
        '--url',
        slow.url,
        '--api-key',
        tenant.key,
        '--tenant-id',
        tenant.workspace,
        '--repo-url',
        repo.url,
        '--poll-interval',
        '0.1',
        '--timeout',
        '0.5',
        '--keep',
      ]);
      expect(r.code).toBe(EXIT.timeout);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(r.stderr).toMatch(/not DEPLOYED within 0\.5 s \(last status QUEUED\)/);
      expect(r.stdout).not.toContain('deleted');
      expect((await client(slow.url, tenant).get('/deployments')).json.resources).toHaveLength(1);
    } finally {
      await slow.close();
    }
  });

  it('exit 4 when an API call fails, with the status and answer', async () => {
    const tenant = await svc.tenant('client');
    const r = await runInProcess([
      '--url',
      gw.url,
      '--api-key',
      `gwk_${'B'.repeat(43)}`,
      '--tenant-id',
      tenant.workspace,
      '--repo-url',
      repo.url,
    ]);
    expect(r.code).toBe(EXIT.api);
    expect(r.stderr).toContain('POST /v2/deployments: expected 201, got 401: {"detail":"Invalid API key."}');
  });

  it('exit 2 on usage errors', async () => {
    expect((await runInProcess(['--repo-url', repo.url])).stderr).toMatch(/--api-key \(or API_KEY\) is required/);
    expect(
      (await runInProcess(['--repo-url', repo.url, '--api-key', 'k', '--tenant-id', 't', '--poll-interval', 'soon']))
        .code,
    ).toBe(EXIT.usage);
    expect((await runInProcess(['--bogus'])).code).toBe(EXIT.usage);
  });
});
