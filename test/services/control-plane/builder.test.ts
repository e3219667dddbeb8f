import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BuildFailure, GitBuilder, type BuildRequest } from '../../../src/services/control-plane/builds/builder.ts';
import { git, GitError } from '../../../src/services/control-plane/builds/git.ts';
import { closedPort } from '../../helpers/upstream.ts';
import { GOOD_APP, makeRepo, type TestRepo } from './helpers.ts';

/**
 * The builder on real temporary git repositories: what it checks out and
 * records, and the reason it gives for each way a source can be wrong.
 */

let work: string;
let repo: TestRepo;
let first: string;
let head: string;
/** Accepts connections and never answers: a git server that hangs. */
let silent: Server;
const sockets = new Set<Socket>();

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'cp-builder-'));
  repo = makeRepo();
  first = repo.git('rev-parse', 'HEAD');
  repo.git('tag', 'v1');
  head = repo.commit({ 'src/agent.ts': 'export const graph = { v: 2 };\n' }, 'second');
  silent = createServer((s) => (sockets.add(s), s.on('close', () => sockets.delete(s))));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
});

afterAll(async () => {
  sockets.forEach((s) => s.destroy());
  await new Promise<void>((r) => silent.close(() => r()));
  repo.remove();
  rmSync(work, { recursive: true, force: true });
});

const builder = new GitBuilder({ gitTimeoutMs: 10_000 });
let n = 0;
const request = (overrides: Partial<BuildRequest> = {}): BuildRequest => ({
  source: 'github',
  repoUrl: repo.url,
  repoRef: 'main',
  configPath: 'langgraph.json',
  imageUri: null,
  workFolder: join(work, `rev-${++n}`),
  ...overrides,
});
const never = new AbortController().signal;

/** The BuildFailure reason of building `req` (fails the test if it builds). */
async function reason(req: BuildRequest): Promise<string> {
  const err = await builder.build(req, never).then(
    () => new Error('built, but a failure was expected'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(BuildFailure);
  expect(existsSync(req.workFolder)).toBe(false); // nothing left behind
  return (err as Error).message;
}

/** A one-off repository holding `files` on main. */
const repoWith = (files: Record<string, string | null>): TestRepo => makeRepo(files);

describe.concurrent('GitBuilder: success', () => {
  it('checks out a branch, records its commit, reads graphs and auth', async () => {
    const req = request();
    const out = await builder.build(req, never);
    expect(out).toEqual({
      commitSha: head,
      graphs: { agent: './src/agent.ts:graph' },
      authPath: './src/auth.ts:auth',
      env: {},
    });
    expect(readFileSync(join(req.workFolder, 'src/agent.ts'), 'utf8')).toContain('v: 2');
  });

  it('checks out a tag, a full commit and a short commit', async () => {
    expect((await builder.build(request({ repoRef: 'v1' }), never)).commitSha).toBe(first);
    const full = request({ repoRef: first });
    expect((await builder.build(full, never)).commitSha).toBe(first);
    expect(readFileSync(join(full.workFolder, 'src/agent.ts'), 'utf8')).not.toContain('v: 2');
    expect((await builder.build(request({ repoRef: first.slice(0, 10) }), never)).commitSha).toBe(first);
  });

  it('takes a plain local path as well as a file:// URL', async () => {
    expect((await builder.build(request({ repoUrl: repo.dir }), never)).commitSha).toBe(head);
  });

  it('resolves files relative to a config in a subfolder; accepts {"path"} graphs and an auth file without export', async () => {
    const r = repoWith({
      'apps/bot/langgraph.json': JSON.stringify({
        graphs: { bot: { path: './graph.ts:bot', description: 'x' } },
        auth: { path: './auth.ts' },
      }),
      'apps/bot/graph.ts': 'export const bot = 1;',
      'apps/bot/auth.ts': 'export default {};',
    });
    try {
      const out = await builder.build(request({ repoUrl: r.url, configPath: 'apps/bot/langgraph.json' }), never);
      expect(out.graphs).toEqual({ bot: './graph.ts:bot' });
      expect(out.authPath).toBe('./auth.ts:default');
    } finally {
      r.remove();
    }
  });

  it('an image source builds without git', async () => {
    const req = request({ source: 'external_docker', repoUrl: null, repoRef: null, imageUri: 'docker.io/acme/app:1' });
    expect(await builder.build(req, never)).toEqual({ commitSha: null, graphs: null, authPath: null });
    expect(existsSync(req.workFolder)).toBe(false);
  });
});

describe.concurrent('GitBuilder: each failure has a reason a user can act on', () => {
  it('a local path that is not a repository', async () => {
    expect(await reason(request({ repoUrl: '/nonexistent/repo' }))).toMatch(
      /^repo_url: cannot read repository \/nonexistent\/repo: .*(not appear to be a git repository|does not exist)/,
    );
  });

  it('a remote nobody listens on fails fast', async () => {
    const started = Date.now();
    const why = await reason(request({ repoUrl: `http://127.0.0.1:${await closedPort()}/repo.git` }));
    expect(why).toMatch(
      /^repo_url: cannot read repository http:\/\/127\.0\.0\.1:\d+\/repo\.git: .*(Failed to connect|Could not connect|Connection refused)/i,
    );
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('a remote that never answers fails at the git time budget', async () => {
    const port = (silent.address() as { port: number }).port;
    const started = Date.now();
    const err = await new GitBuilder({ gitTimeoutMs: 300 })
      .build(request({ repoUrl: `http://127.0.0.1:${port}/repo.git` }), never)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BuildFailure);
    expect((err as Error).message).toMatch(/^repo_url: cannot read repository .*: no answer within 0\.3 s$/);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('credentials in the URL never appear in the reason', async () => {
    const why = await reason(request({ repoUrl: `http://user:s3cr3t-token@127.0.0.1:${await closedPort()}/repo.git` }));
    expect(why).toContain('http://***@127.0.0.1');
    expect(why).not.toContain('s3cr3t');
  });

  it('transports that run commands are refused, and nothing runs', async () => {
    const marker = join(work, 'pwned');
    const why = await reason(request({ repoUrl: `ext::sh -c touch% ${marker}` }));
    expect(why).toMatch(/^repo_url: cannot read repository/);
    expect(existsSync(marker)).toBe(false);
  });

  it('with localRepos: false (LOCAL_REPOS=deny), a path on this host or a file:// URL is refused before git runs', async () => {
    const denying = new GitBuilder({ gitTimeoutMs: 10_000, localRepos: false });
    for (const repoUrl of [repo.dir, repo.url, repo.url.replace(/^file:/, 'FILE:')]) {
      const req = request({ repoUrl });
      const err = await denying.build(req, never).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BuildFailure);
      expect((err as Error).message).toMatch(
        /^repo_url: repositories on this host are not allowed here \(LOCAL_REPOS=deny/,
      );
      expect(existsSync(req.workFolder)).toBe(false);
    }
  });

  it('with localRepos: false, git itself refuses the file transport too', async () => {
    const dest = join(work, `git-level-${++n}`);
    const err = await git(['clone', '--quiet', '--', repo.url, dest], { timeoutMs: 10_000, localRepos: false }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(GitError);
    expect((err as Error).message).toMatch(/transport 'file' not allowed/);
    expect(existsSync(join(dest, 'langgraph.json'))).toBe(false);
  });

  it('a ref that is no branch, tag or commit', async () => {
    expect(await reason(request({ repoRef: 'nope' }))).toBe(
      `repo_ref: "nope" is not a branch, tag or commit of ${repo.url}`,
    );
  });

  it('a commit that is not in the repository', async () => {
    expect(await reason(request({ repoRef: 'deadbeefdeadbeef' }))).toBe(
      `repo_ref: commit deadbeefdeadbeef not found in ${repo.url}`,
    );
  });

  it('no app config at the ref', async () => {
    expect(await reason(request({ configPath: 'missing.json' }))).toBe(
      'langgraph_config_path: file missing.json not found at ref main',
    );
  });

  it('a config path outside the repository', async () => {
    expect(await reason(request({ configPath: '../langgraph.json' }))).toMatch(
      /^langgraph_config_path: \.\.\/langgraph\.json must be a path inside the repository$/,
    );
  });

  // One branch of the shared repository per case (made in one git process); the message names the branch.
  const cases: [string, Record<string, string | null>, string | RegExp][] = [
    ['not JSON', { 'langgraph.json': '{"graphs": ' }, /^langgraph\.json: not valid JSON \(/],
    ['not an object', { 'langgraph.json': '[1]' }, 'langgraph.json: must be a JSON object with "graphs"'],
    [
      'no graphs',
      { 'langgraph.json': '{}' },
      'langgraph.json: "graphs" is required: a map of graph name to "<file>:<export>"',
    ],
    [
      'graphs not a map',
      { 'langgraph.json': '{"graphs": ["a"]}' },
      'langgraph.json: "graphs" must be an object mapping graph names to "<file>:<export>"',
    ],
    [
      'empty graphs',
      { 'langgraph.json': '{"graphs": {}}' },
      'langgraph.json: "graphs" is empty: declare at least one graph',
    ],
    [
      'a graph without export',
      { 'langgraph.json': '{"graphs": {"agent": "src/agent.ts"}}' },
      'graphs.agent: "src/agent.ts" must be "<file>:<export>", e.g. "./src/agent.ts:graph"',
    ],
    [
      'a graph that is not a string',
      { 'langgraph.json': '{"graphs": {"agent": 3}}' },
      'langgraph.json: graphs.agent: must be "<file>:<export>", e.g. "./src/agent.ts:graph"',
    ],
    ['a graph file missing', { 'src/agent.ts': null }, 'graphs.agent: file src/agent.ts not found at ref {ref}'],
    [
      'a graph file that is a folder',
      { 'langgraph.json': '{"graphs": {"agent": "./src:graph"}}' },
      'graphs.agent: src is not a file at ref {ref}',
    ],
    [
      'a graph outside the repository',
      { 'langgraph.json': '{"graphs": {"agent": "../x.ts:graph"}}' },
      'graphs.agent: file ../x.ts is outside the repository',
    ],
    ['an auth file missing', { 'src/auth.ts': null }, 'auth.path: file src/auth.ts not found at ref {ref}'],
    [
      'auth.path not a string',
      { 'langgraph.json': JSON.stringify({ graphs: { agent: './src/agent.ts:graph' }, auth: { path: 1 } }) },
      'langgraph.json: auth.path: must be "<file>:<export>" or "<file>", e.g. "./src/auth.ts:auth"',
    ],
  ];
  const branchOf = (what: string) => `case-${what.replaceAll(' ', '-').replaceAll('.', '')}`;
  beforeAll(() => repo.branches(Object.fromEntries(cases.map(([what, change]) => [branchOf(what), change]))));

  for (const [what, , expected] of cases) {
    it(what, async () => {
      const ref = branchOf(what);
      const why = await reason(request({ repoRef: ref }));
      if (typeof expected === 'string') expect(why).toBe(expected.replace('{ref}', ref));
      else expect(why).toMatch(expected);
    });
  }

  it('a graph file that is a symlink out of the repository', async () => {
    const outside = join(work, 'outside.ts');
    writeFileSync(outside, 'export const graph = 1;');
    const r = repoWith(GOOD_APP);
    try {
      rmSync(join(r.dir, 'src/agent.ts'));
      symlinkSync(outside, join(r.dir, 'src/agent.ts'));
      r.git('add', '-A');
      r.git('commit', '--quiet', '-m', 'symlink');
      expect(await reason(request({ repoUrl: r.url }))).toBe(
        'graphs.agent: file src/agent.ts points outside the repository',
      );
    } finally {
      r.remove();
    }
  });
});

describe('GitBuilder: cancellation', () => {
  it('an abort stops git at once and leaves no work folder', async () => {
    const port = (silent.address() as { port: number }).port;
    const abort = new AbortController();
    const req = request({ repoUrl: `http://127.0.0.1:${port}/repo.git` });
    const started = Date.now();
    const pending = builder.build(req, abort.signal).catch((e: unknown) => e);
    setTimeout(() => abort.abort(), 100);
    const err = await pending;
    expect(err).toBeInstanceOf(GitError);
    expect((err as GitError).kind).toBe('aborted');
    expect(Date.now() - started).toBeLessThan(5000);
    expect(existsSync(req.workFolder)).toBe(false);
  });
});
