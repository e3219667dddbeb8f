import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BuildFailure, GitBuilder } from '../../src/services/control-plane/builds/builder.ts';
import { makeRepo, type TestRepo } from '../services/control-plane/helpers.ts';

/**
 * Finding "host files through a symlinked .env" (issue 25, attack 8): a checkout's `.env -> /proc/self/environ` (or
 * a link to any file of the host) was read by the control plane into the deployment's environment, and `http.app`,
 * `ui` and graph paths were not held inside the repository either. Each now fails the build naming the key, and
 * nothing of the file behind the link reaches the reason (the status message).
 */
const APP = {
  'src/agent.ts': 'export const graph = {};\n',
  'src/app.ts': 'export const app = {};\n',
  'src/ui.tsx': 'export default {};\n',
};
const config = (extra: Record<string, unknown>) =>
  JSON.stringify({ graphs: { agent: './src/agent.ts:graph' }, ...extra });

let repo: TestRepo;
let outsideDir: string;
let work: string;

beforeAll(() => {
  outsideDir = mkdtempSync(join(tmpdir(), 'sec-outside-'));
  writeFileSync(join(outsideDir, 'app.ts'), 'export const app = {};\n');
  repo = makeRepo({ ...APP, 'langgraph.json': config({}) });
  const link = (target: string, path: string) => symlinkSync(target, join(repo.dir, path));
  link('/proc/self/environ', '.env');
  link('/etc/hostname', 'host.env');
  link(outsideDir, 'linked');
  repo.commit({}, 'links');
  repo.branches({
    'env-environ': { 'langgraph.json': config({ env: '.env' }) },
    'env-host-file': { 'langgraph.json': config({ env: './host.env' }) },
    'env-dotdot': { 'langgraph.json': config({ env: '../secrets.env' }) },
    'http-app-through-dir-link': { 'langgraph.json': config({ http: { app: './linked/app.ts:app' } }) },
    'http-app-outside': { 'langgraph.json': config({ http: { app: '../app.ts:app' } }) },
    'ui-outside': { 'langgraph.json': config({ ui: { chat: '/etc/hostname' } }) },
    'auth-through-env-link': { 'langgraph.json': config({ auth: { path: './.env' } }) },
    'graph-dotdot': { 'langgraph.json': JSON.stringify({ graphs: { agent: '../agent.ts:graph' } }) },
    'inside-ok': {
      'langgraph.json': config({ env: { A: '1' }, http: { app: './src/app.ts:app' }, ui: { c: './src/ui.tsx' } }),
    },
  });
  work = mkdtempSync(join(tmpdir(), 'sec-paths-'));
});
afterAll(() => {
  repo?.remove();
  for (const d of [outsideDir, work]) if (d) rmSync(d, { recursive: true, force: true });
});

let n = 0;
const build = (ref: string) =>
  new GitBuilder({ gitTimeoutMs: 10_000 }).build(
    {
      source: 'github',
      repoUrl: repo.url,
      repoRef: ref,
      configPath: 'langgraph.json',
      imageUri: null,
      workFolder: join(work, `rev-${++n}`),
    },
    new AbortController().signal,
  );
const reason = async (ref: string) => {
  const err = await build(ref).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(BuildFailure);
  return (err as Error).message;
};

describe('files the app config names stay inside the checkout', () => {
  it('.env -> /proc/self/environ fails the build naming env and .env, with nothing of the environment', async () => {
    const why = await reason('env-environ');
    expect(why).toBe('env: file .env points outside the repository');
    expect(why).not.toMatch(/PATH=|HOME=/);
  });

  it.each([
    ['env-host-file', 'env: file host.env points outside the repository'],
    ['env-dotdot', 'env: file ../secrets.env is outside the repository'],
    ['http-app-through-dir-link', 'http.app: file linked/app.ts points outside the repository'],
    ['http-app-outside', 'http.app: file ../app.ts is outside the repository'],
    ['ui-outside', 'ui.chat: file /etc/hostname is outside the repository'],
    ['auth-through-env-link', 'auth.path: file .env points outside the repository'],
    ['graph-dotdot', 'graphs.agent: file ../agent.ts is outside the repository'],
  ])('%s: %s', async (ref, expected) => {
    expect(await reason(ref)).toBe(expected);
  });

  it('files inside pass', async () => {
    expect((await build('inside-ok')).graphs).toEqual({ agent: './src/agent.ts:graph' });
  });
});
