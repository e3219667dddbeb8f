import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BuildFailure } from '../../src/services/control-plane/builds/app-config.ts';
import { GitBuilder } from '../../src/services/control-plane/builds/builder.ts';
import { folderBytes } from '../../src/services/control-plane/builds/folder-size.ts';

/**
 * Finding "a checkout wrote 1.47 GiB before CHECKOUT_MAX_MB stopped it" (issue 34, attack 11): the size was checked
 * once git had finished. A 1 MiB pack checks out as 512 MiB; now the folder is measured while git writes it, git is
 * killed once it is past the bound, and no one file may outgrow the bound at all (RLIMIT_FSIZE: a look every 200 ms
 * let 280 MB through on a loaded machine): the checkout never holds more than the bound, and the build fails with the
 * same one line as before.
 */
const MAX_MB = 64;
const BLOB = 512 * 1024 * 1024;
let work: string;
let repo: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'sec-checkout-'));
  repo = join(work, 'repo');
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', '-C', repo, ...args], { stdio: 'ignore' });
  execFileSync('git', ['init', '-q', '-b', 'main', repo]);
  writeFileSync(join(repo, 'langgraph.json'), JSON.stringify({ graphs: { a: './a.js:g' } }));
  writeFileSync(join(repo, 'a.js'), 'export const g = {};\n');
  // 512 MiB of one letter: it packs to about 1 MiB. Not zeros: git checks those out as a sparse file, whose size
  // jumps to the end at once (caught all the same, but it would measure nothing here).
  const f = await open(join(repo, 'letters.bin'), 'w');
  const chunk = Buffer.alloc(1024 * 1024, 'x');
  for (let at = 0; at < BLOB; at += chunk.length) await f.write(chunk);
  await f.close();
  git('add', '.');
  git('commit', '-qm', 'zeros');
}, 120_000);
afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('a checkout that grows past its bound', { timeout: 120_000 }, () => {
  it('is stopped as it is written, and fails the build naming the bound', async () => {
    const target = join(work, 'checkout');
    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, await folderBytes(target, Number.MAX_SAFE_INTEGER));
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const err = await new GitBuilder({ gitTimeoutMs: 60_000, maxCheckoutBytes: MAX_MB * 1024 * 1024 })
      .build(
        {
          source: 'github',
          repoUrl: repo,
          repoRef: 'main',
          configPath: 'langgraph.json',
          imageUri: null,
          workFolder: target,
        },
        new AbortController().signal,
      )
      .catch((e: unknown) => e)
      .finally(() => (sampling = false));
    await sampler;
    expect(err).toBeInstanceOf(BuildFailure);
    expect((err as Error).message).toBe(`repo_url: the checkout of main is over its limit of ${MAX_MB} MiB`);
    // No one file outgrows the bound (RLIMIT_FSIZE): the checkout holds at most the bound, the few small files and
    // git's own data (its pack of about 1 MiB, the index: 69.5 MB at most seen), whatever the machine's load.
    expect(peak).toBeLessThanOrEqual((MAX_MB + 8) * 1024 * 1024);
  });
});
