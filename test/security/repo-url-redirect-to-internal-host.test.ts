import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BuildFailure, GitBuilder } from '../../src/services/control-plane/builds/builder.ts';
import { git } from '../../src/services/control-plane/builds/git.ts';
import { repoHostPolicy } from '../../src/services/control-plane/builds/repo-hosts.ts';
import { makeRepo, type TestRepo } from '../services/control-plane/helpers.ts';
import { gitHttpServer, redirector, type GitHttpServer } from './fixtures/git-http-server.ts';

/**
 * Finding "repo_url host checks bypassed by redirects" (issue 25, attack 7): in production, a repo_url on a host
 * REPO_HOSTS_ALLOWED names, answering 302 to a loopback-only git server, got that internal repository cloned and
 * deployed (git follows redirects of its first request by default). Now git follows none, and connects to the address
 * the host check resolved (http.curloptResolve), whatever DNS answers later.
 */
let repo: TestRepo;
let internal: GitHttpServer;
let hop: { port: number; close(): Promise<void> };
let work: string;

beforeAll(async () => {
  repo = makeRepo();
  internal = await gitHttpServer(join(repo.dir, '.git'));
  hop = await redirector(`http://127.0.0.1:${internal.port}/repo.git`);
  work = mkdtempSync(join(tmpdir(), 'sec-redirect-'));
});
afterAll(async () => {
  await Promise.all([internal?.close(), hop?.close()]);
  repo?.remove();
  rmSync(work, { recursive: true, force: true });
});

const request = (repoUrl: string, name: string) => ({
  source: 'github' as const,
  repoUrl,
  repoRef: 'main',
  configPath: 'langgraph.json',
  imageUri: null,
  workFolder: join(work, name),
});

describe('a repo_url on an allowed host that redirects', () => {
  it('is refused: the internal server behind the 302 is never asked', async () => {
    const builder = new GitBuilder({
      gitTimeoutMs: 10_000,
      localRepos: false,
      repoHosts: repoHostPolicy([`127.0.0.1:${hop.port}`]),
    });
    const before = internal.requests.length;
    const err = await builder
      .build(request(`http://127.0.0.1:${hop.port}/x.git`, 'redirected'), new AbortController().signal)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BuildFailure);
    expect((err as Error).message).toMatch(/^repo_url: cannot read repository http:\/\/127\.0\.0\.1:\d+\/x\.git: /);
    expect(internal.requests.length).toBe(before);
  });

  it('the same server named directly (and allowed) is cloned: the refusal above is the redirect', async () => {
    const builder = new GitBuilder({
      gitTimeoutMs: 10_000,
      localRepos: false,
      repoHosts: repoHostPolicy([`127.0.0.1:${internal.port}`]),
    });
    const built = await builder.build(
      request(`http://127.0.0.1:${internal.port}/repo.git`, 'direct'),
      new AbortController().signal,
    );
    expect(built.commitSha).toBe(repo.git('rev-parse', 'HEAD'));
  });

  it('git connects to the pinned address, not to what the name resolves to', async () => {
    // `gateway-test.invalid` resolves nowhere: the clone works only through the pin.
    const folder = join(work, 'pinned');
    await git(['clone', '--quiet', '--', `http://gateway-test.invalid:${internal.port}/repo.git`, folder], {
      timeoutMs: 10_000,
      localRepos: false,
      pin: `gateway-test.invalid:${internal.port}:127.0.0.1`,
    });
    expect(await git(['rev-parse', 'HEAD'], { cwd: folder, timeoutMs: 5000 })).toBe(
      repo.git('rev-parse', 'HEAD') + '\n',
    );
  });

  it('admit answers the addresses it checked as the pin', async () => {
    const pinned = await repoHostPolicy(['127.0.0.0/8', '::1/128']).admit('http://localhost:8080/x.git');
    expect(pinned.refused).toBeNull();
    expect(pinned.refused === null && pinned.pin).toMatch(/^localhost:8080:(127\.0\.0\.1|\[::1\])/);
  });
});
