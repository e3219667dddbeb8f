import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BuildFailure, GitBuilder } from '../../src/services/control-plane/builds/builder.ts';
import { makeRepo, type TestRepo } from '../services/control-plane/helpers.ts';

/**
 * `ui` of a deployment's langgraph.json names what the bundler reads at the revision's start. The build refuses a
 * path out of the repository (absolute, `../`, a symlink), and also one out of the app's folder (the config's): the
 * bundler takes only files below it, and saying so at the build beats a failed start.
 */
const config = (ui: unknown) => JSON.stringify({ graphs: { agent: './agent.ts:graph' }, ui });
let repo: TestRepo;
let work: string;

beforeAll(() => {
  repo = makeRepo({
    'app/agent.ts': 'export const graph = {};\n',
    'shared/ui.tsx': 'export default {};\n',
    'app/langgraph.json': config({}),
  });
  symlinkSync('/etc/passwd', join(repo.dir, 'app', 'passwd.tsx'));
  repo.commit({}, 'link');
  repo.branches({
    'dotdot-etc': { 'app/langgraph.json': config({ chat: '../../etc/passwd' }) },
    absolute: { 'app/langgraph.json': config({ chat: '/etc/passwd' }) },
    'link-out': { 'app/langgraph.json': config({ chat: './passwd.tsx' }) },
    'repo-not-app': { 'app/langgraph.json': config({ chat: '../shared/ui.tsx' }) },
    'bad-name': { 'app/langgraph.json': config({ '<x>': './agent.ts' }) },
  });
  work = mkdtempSync(join(tmpdir(), 'sec-ui-'));
});
afterAll(() => {
  repo?.remove();
  if (work) rmSync(work, { recursive: true, force: true });
});

let n = 0;
const reason = async (ref: string) => {
  const err = await new GitBuilder({ gitTimeoutMs: 10_000 })
    .build(
      {
        source: 'github',
        repoUrl: repo.url,
        repoRef: ref,
        configPath: 'app/langgraph.json',
        imageUri: null,
        workFolder: join(work, `rev-${++n}`),
      },
      new AbortController().signal,
    )
    .catch((e: unknown) => e);
  expect(err).toBeInstanceOf(BuildFailure);
  return (err as Error).message;
};

describe('ui files stay inside the app', () => {
  it.each([
    ['dotdot-etc', 'ui.chat: file ../../etc/passwd is outside the repository'],
    ['absolute', 'ui.chat: file /etc/passwd is outside the repository'],
    ['link-out', 'ui.chat: file app/passwd.tsx points outside the repository'],
    ['repo-not-app', "ui.chat: file ../shared/ui.tsx is outside the app's folder (where app/langgraph.json is)"],
    ['bad-name', 'app/langgraph.json: ui.<x>: names are 1-128 letters, digits, "_", "." or "-"'],
  ])('%s: BUILD_FAILED %s', async (ref, expected) => {
    const why = await reason(ref);
    expect(why).toBe(expected);
    expect(why).not.toContain('root:');
  });
});
