import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BuildFailure, GitBuilder } from '../../src/services/control-plane/builds/builder.ts';
import { repoHostPolicy } from '../../src/services/control-plane/builds/repo-hosts.ts';
import { loadControlPlaneSettings } from '../../src/services/control-plane/settings.ts';
import { SettingsError } from '../../src/settings/env.ts';
import { closedPort } from '../helpers/upstream.ts';
import {
  client,
  deploymentBody,
  imageBody,
  startControlPlane,
  type TestControlPlane,
} from '../services/control-plane/helpers.ts';

/**
 * Finding "repo_url probes internal hosts": a repo_url at a loopback or private address made the builder connect
 * there, and the build's reason told an open port from a closed one. With NODE_ENV=production such a repo_url is
 * refused (422 naming repo_url) unless REPO_HOSTS_ALLOWED names it; the host is resolved at create and patch time and
 * again before the clone. Traffic here goes to 127.0.0.1 only (other addresses are refused before any connection).
 */
let prod: TestControlPlane;
let allowing: TestControlPlane;
let port: number;

beforeAll(async () => {
  port = await closedPort();
  prod = await startControlPlane({ NODE_ENV: 'production' });
  allowing = await startControlPlane({ NODE_ENV: 'production', REPO_HOSTS_ALLOWED: `127.0.0.1:${port}` });
});
afterAll(async () => {
  await Promise.all([prod?.close(), allowing?.close()]);
});

const REPO_URL_LOC = ['body', 'source_config', 'repo_url'];

describe('with NODE_ENV=production a repo_url may not reach internal addresses', () => {
  // Loopback only, so that even a regression sends nothing elsewhere; other ranges are checked on the policy below.
  it.each([
    () => `http://127.0.0.1:${port}/x.git`,
    () => `http://localhost:${port}/x.git`,
    () => `https://[::1]:${port}/x.git`,
    () => `ssh://git@127.0.0.1:${port}/x.git`,
    () => 'git@127.0.0.1:acme/x.git',
    () => `https://user:tok@127.0.0.1:${port}/x.git`,
  ])('create %#: 422 naming repo_url', async (urlOf) => {
    const url = urlOf();
    const api = client(prod.url, await prod.tenant());
    const res = await api.post('/deployments', deploymentBody(url));
    expect(res.status).toBe(422);
    expect(res.json.detail[0].loc).toEqual(REPO_URL_LOC);
    expect(res.json.detail[0].msg).toMatch(/^repo_url: .*REPO_HOSTS_ALLOWED/);
    expect(res.text).not.toContain('tok');
  });

  it('patch to an internal repo_url: 422', async () => {
    const api = client(prod.url, await prod.tenant());
    const created = await api.post('/deployments', imageBody());
    expect(created.status).toBe(201);
    const res = await api.patch(`/deployments/${created.json.id}`, {
      source_config: { repo_url: 'http://127.0.0.1/x' },
    });
    expect(res.status).toBe(422);
    expect(res.json.detail[0].loc).toEqual(REPO_URL_LOC);
  });

  it('REPO_HOSTS_ALLOWED names a host:port: accepted', async () => {
    const api = client(allowing.url, await allowing.tenant());
    const res = await api.post('/deployments', deploymentBody(`http://127.0.0.1:${port}/x.git`));
    expect(res.status).toBe(201);
    const other = await api.post('/deployments', deploymentBody(`http://127.0.0.1:${port + 1}/x.git`));
    expect(other.status).toBe(422);
  });

  it('the builder checks again right before the clone (DNS may have changed since)', async () => {
    const work = mkdtempSync(join(tmpdir(), 'sec-repo-hosts-'));
    try {
      const builder = new GitBuilder({ gitTimeoutMs: 5000, repoHosts: repoHostPolicy([]) });
      const req = {
        source: 'github' as const,
        repoUrl: `http://localhost:${port}/x.git`,
        repoRef: 'main',
        configPath: 'langgraph.json',
        imageUri: null,
        workFolder: join(work, 'rev'),
      };
      const err = await builder.build(req, new AbortController().signal).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BuildFailure);
      expect((err as Error).message).toMatch(/^repo_url: localhost is \(or resolves to\) /);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  it('public addresses pass, CIDR entries allow, development does not check, a bad entry fails naming the variable', async () => {
    const policy = repoHostPolicy(['10.0.0.0/8', 'git.internal:8443']);
    expect(await policy.check('https://140.82.112.3/a/b.git')).toBeNull(); // an IP literal: no lookup, no traffic
    expect(await policy.check('https://10.9.9.9/a/b.git')).toBeNull();
    expect(await policy.check('https://git.internal:8443/a.git')).toBeNull();
    expect(await policy.check('https://[::ffff:127.0.0.1]/a.git')).toMatch(/^repo_url: /);
    for (const internal of [
      'https://10.1.2.3/x.git',
      'ssh://git@169.254.169.254/x.git',
      'git@192.168.1.1:acme/x.git',
      'https://u:p@172.16.0.9/x.git',
      'https://[fd00::2]/x.git',
      'http://0.0.0.0/x.git',
    ])
      expect(await repoHostPolicy([]).check(internal)).toMatch(/^repo_url: .* a loopback, private or reserved address/);
    expect(await policy.check('/srv/repos/a')).toBeNull(); // LOCAL_REPOS decides
    expect(loadControlPlaneSettings({ NODE_ENV: 'development' }).repoHostsChecked).toBe(false);
    expect(loadControlPlaneSettings({ NODE_ENV: 'production' }).repoHostsChecked).toBe(true);
    expect(() => loadControlPlaneSettings({ REPO_HOSTS_ALLOWED: '10.0.0.0/99' })).toThrow(SettingsError);
    expect(() => loadControlPlaneSettings({ REPO_HOSTS_ALLOWED: 'a b' })).toThrow(/^REPO_HOSTS_ALLOWED: /);
  });
});
