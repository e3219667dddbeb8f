import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { GitBuilder } from '../../src/services/control-plane/builds/builder.ts';
import { makeRepo, type TestRepo } from '../services/control-plane/helpers.ts';

/**
 * Finding "shared HOME and the gateway's environment in git" (issue 25, attack 3): a deployment's code wrote
 * `~/.gitconfig` in the HOME it shares with the gateway, and the gateway's own git read it: `url.<x>.insteadOf` made
 * another tenant's next build check out the attacker's repository. Git now runs with no global or system config and an
 * empty HOME of its own. Here the test process plays the gateway, its HOME a temporary folder the "attacker" writes.
 */
// Before any import: the gateway's HOME is this folder from its start.
const { home, savedHome } = vi.hoisted(() => {
  const saved = process.env.HOME;
  const { mkdtempSync } = require('node:fs') as typeof import('node:fs');
  const { tmpdir } = require('node:os') as typeof import('node:os');
  process.env.HOME = mkdtempSync(`${tmpdir()}/sec-home-`);
  return { home: process.env.HOME, savedHome: saved };
});
let victim: TestRepo;
let attacker: TestRepo;
let work: string;

beforeAll(() => {
  victim = makeRepo();
  attacker = makeRepo({
    'langgraph.json': JSON.stringify({ graphs: { agent: './src/agent.ts:graph' } }),
    'src/agent.ts': 'export const graph = {}; // attacker\n',
  });
  work = mkdtempSync(join(tmpdir(), 'sec-home-work-'));
  writeFileSync(join(home, '.gitconfig'), `[url "${attacker.url}"]\n\tinsteadOf = ${victim.url}\n`);
});
afterAll(() => {
  process.env.HOME = savedHome;
  for (const r of [victim, attacker]) r?.remove();
  for (const d of [home, work]) if (d) rmSync(d, { recursive: true, force: true });
});

describe("a ~/.gitconfig in the gateway's HOME", () => {
  it('does not steer the build: the victim repository is checked out', async () => {
    const built = await new GitBuilder({ gitTimeoutMs: 10_000 }).build(
      {
        source: 'github',
        repoUrl: victim.url,
        repoRef: 'main',
        configPath: 'langgraph.json',
        imageUri: null,
        workFolder: join(work, 'rev'),
      },
      new AbortController().signal,
    );
    expect(built.commitSha).toBe(victim.git('rev-parse', 'HEAD'));
    expect(built.commitSha).not.toBe(attacker.git('rev-parse', 'HEAD'));
  });
});
