import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { GitBuilder } from '../../src/services/control-plane/builds/builder.ts';
import { installDependencies, InstallFailure } from '../../src/services/control-plane/builds/install.ts';
import { BuildFailure } from '../../src/services/control-plane/builds/app-config.ts';
import { makeRepo } from '../services/control-plane/helpers.ts';

/**
 * Finding "install scripts and ~/.npmrc run as the gateway" (issue 25, attack 3, the npm half): npm ran every install
 * script of an app and its dependencies, and read the `~/.npmrc` of the HOME it shared with the gateway (a deployment
 * could write `script-shell` there, so the next tenant's install ran its program). Scripts now run only when the app
 * config says `"install_scripts": true`, npm reads no config of the gateway's, and a checkout or `node_modules` over
 * its size limit fails the build with one line. No network: the apps here have no dependencies.
 */
const { home, savedHome } = vi.hoisted(() => {
  const saved = process.env.HOME;
  const { mkdtempSync } = require('node:fs') as typeof import('node:fs');
  const { tmpdir } = require('node:os') as typeof import('node:os');
  process.env.HOME = mkdtempSync(`${tmpdir()}/sec-npm-home-`);
  return { home: process.env.HOME, savedHome: saved };
});
let work: string;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'sec-npm-'));
  const shell = join(home, 'evil-shell');
  writeFileSync(shell, `#!/bin/sh\ntouch "${join(home, 'npmrc-obeyed')}"\nexec /bin/sh "$@"\n`);
  chmodSync(shell, 0o755);
  writeFileSync(join(home, '.npmrc'), `script-shell=${shell}\n`);
});
afterAll(() => {
  process.env.HOME = savedHome;
  for (const d of [home, work]) if (d) rmSync(d, { recursive: true, force: true });
});

/** An app folder whose own package.json has a preinstall script that leaves a file. */
function app(name: string, config: Record<string, unknown>): string {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'langgraph.json'), JSON.stringify({ graphs: { a: './a.js:g' }, ...config }));
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({
      name,
      version: '1.0.0',
      scripts: { preinstall: "node -e \"require('fs').writeFileSync('ran', '')\"" },
    }),
  );
  return dir;
}

describe('npm in a build', () => {
  it('runs no install script unless the app config opts in', async () => {
    const dir = app('quiet', {});
    const { log } = await installDependencies(dir, { timeoutMs: 60_000 });
    expect(existsSync(join(dir, 'ran'))).toBe(false);
    expect(log).toContain('--ignore-scripts');
  });

  it('opted in, the scripts run, and never through a ~/.npmrc of the shared HOME', async () => {
    const dir = app('scripted', { install_scripts: true });
    await installDependencies(dir, { timeoutMs: 60_000 });
    expect(existsSync(join(dir, 'ran'))).toBe(true);
    expect(existsSync(join(home, 'npmrc-obeyed'))).toBe(false);
  });

  it('node_modules over its limit fails the install with one line', async () => {
    // A dependency whose small tarball unpacks to 2 MiB (zeros compress well), installed from a file: no network.
    const dep = join(work, 'dep');
    mkdirSync(dep);
    writeFileSync(join(dep, 'package.json'), JSON.stringify({ name: 'dep', version: '1.0.0' }));
    writeFileSync(join(dep, 'blob'), Buffer.alloc(2 * 1024 * 1024));
    execFileSync('npm', ['pack', '--silent', '--pack-destination', work], {
      cwd: dep,
      env: { PATH: process.env.PATH, HOME: work },
    });
    const dir = app('heavy', {});
    const pkg = { name: 'heavy', version: '1.0.0', dependencies: { dep: `file:${join(work, 'dep-1.0.0.tgz')}` } };
    writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg));
    const err = await installDependencies(dir, { timeoutMs: 60_000, maxBytes: 1024 * 1024 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InstallFailure);
    expect((err as Error).message).toBe('npm install: node_modules is over its limit of 1 MiB');
  });

  it('a checkout over its limit fails the build naming the limit', async () => {
    const repo = makeRepo({
      'langgraph.json': JSON.stringify({ graphs: { a: './a.js:g' } }),
      'a.js': 'export const g = {};\n',
      'blob.bin': 'x'.repeat(2 * 1024 * 1024),
    });
    try {
      const err = await new GitBuilder({ gitTimeoutMs: 10_000, maxCheckoutBytes: 1024 * 1024 })
        .build(
          {
            source: 'github',
            repoUrl: repo.url,
            repoRef: 'main',
            configPath: 'langgraph.json',
            imageUri: null,
            workFolder: join(work, 'checkout'),
          },
          new AbortController().signal,
        )
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BuildFailure);
      expect((err as Error).message).toBe('repo_url: the checkout of main is over its limit of 1 MiB');
      expect(existsSync(join(work, 'checkout'))).toBe(false);
    } finally {
      repo.remove();
    }
  });
});
