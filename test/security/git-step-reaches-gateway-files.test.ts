import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeSandbox } from '../../src/services/revision-host/local/sandbox/probe.ts';
import { GitBuilder } from '../../src/services/control-plane/builds/builder.ts';
import { git, GitError } from '../../src/services/control-plane/builds/git.ts';
import { GOOD_APP, makeRepo, type TestRepo } from '../services/control-plane/helpers.ts';

/**
 * Finding "git runs as the gateway" (issue 25, attack 3, the git half): a build's `git clone` ran as a plain child
 * of the gateway, so whatever git could be steered into (a transport helper, a bug in a repository's parsing) read and
 * wrote as the gateway: its source, its environment, every other build. With a sandbox every git step of a build runs
 * in it: the clone's target is the one folder it writes, a local repository the one it reads, and the network stays.
 */
const sandboxed = probeSandbox('auto').mode === 'bwrap';
const GATEWAY_PACKAGE = fileURLToPath(new URL('../../package.json', import.meta.url));
let work: string;
let repo: TestRepo;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'sec-git-'));
  repo = makeRepo(GOOD_APP);
});
afterAll(() => {
  repo?.remove();
  rmSync(work, { recursive: true, force: true });
});

describe.skipIf(!sandboxed)('git steps of a build in the sandbox', () => {
  const opts = (writable: string) => ({ timeoutMs: 20_000, sandbox: true, writable });

  it("reads none of the gateway's files", async () => {
    const own = join(work, 'read');
    mkdirSync(own);
    expect(await git(['hash-object', '--', GATEWAY_PACKAGE], { timeoutMs: 20_000 })).toMatch(/^[0-9a-f]{40}/);
    const err = await git(['hash-object', '--', GATEWAY_PACKAGE], opts(own)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GitError);
    expect(await git(['hash-object', '--', `/proc/${process.pid}/environ`], opts(own)).catch(() => null)).toBeNull();
  });

  it('writes nothing outside its folder', async () => {
    const own = join(work, 'own');
    const other = join(work, 'other');
    mkdirSync(own);
    mkdirSync(other);
    // Under /tmp it may even succeed: the sandbox's /tmp is a tmpfs of its own, gone with it.
    await git(['init', '--quiet', '--', other], opts(own)).catch(() => null);
    expect(readdirSync(other)).toEqual([]);
    await git(['init', '--quiet', '--', own], opts(own));
    expect(existsSync(join(own, '.git'))).toBe(true);
  });

  it('a sandboxed build checks out a branch and a commit, and reads the remote', async () => {
    const builder = new GitBuilder({ gitTimeoutMs: 20_000, sandbox: 'bwrap' });
    const build = (ref: string, folder: string) =>
      builder.build(
        {
          source: 'github',
          repoUrl: repo.url,
          repoRef: ref,
          configPath: 'langgraph.json',
          imageUri: null,
          workFolder: join(work, folder),
        },
        new AbortController().signal,
      );
    const head = repo.git('rev-parse', 'HEAD');
    expect((await build('main', 'b1')).commitSha).toBe(head);
    expect((await build(head, 'b2')).commitSha).toBe(head);
    expect(await builder.remoteCommit(repo.url, 'main')).toBe(head);
  });
});
