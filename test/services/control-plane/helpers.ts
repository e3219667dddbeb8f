import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'vitest';
import { listen, type Listening } from '../../../src/listen/listen.ts';
import { createLogger } from '../../../src/log.ts';
import {
  createControlPlane,
  type ControlPlane,
  type ControlPlaneOptions,
} from '../../../src/services/control-plane/control-plane.ts';
import { loadControlPlaneSettings } from '../../../src/services/control-plane/settings.ts';
import { LogCapture } from '../../helpers/gateway.ts';

/** A fixed key so a restarted service can read what an earlier one sealed. */
export const TEST_SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');

/** A temporary git repository on disk with commits made by the test. */
export interface TestRepo {
  readonly dir: string;
  /** `file://` URL of the repository. */
  readonly url: string;
  /** Writes `files` (path → content; null deletes), commits them, answers the commit sha. */
  commit(files: Record<string, string | null>, message?: string): string;
  git(...args: string[]): string;
  /**
   * Creates one branch per entry, each = main plus its changes (path →
   * content; null deletes), in a single `git fast-import` (one process,
   * however many branches: cheap enough for a case per branch).
   */
  branches(cases: Record<string, Record<string, string | null>>): void;
  remove(): void;
}

export const GOOD_APP = {
  'langgraph.json': JSON.stringify({ graphs: { agent: './src/agent.ts:graph' }, auth: { path: './src/auth.ts:auth' } }),
  'src/agent.ts': 'export const graph = {};\n',
  'src/auth.ts': 'export const auth = {};\n',
};

export function makeRepo(files: Record<string, string | null> = GOOD_APP): TestRepo {
  const dir = mkdtempSync(join(tmpdir(), 'cp-repo-'));
  const git = (...args: string[]) =>
    execFileSync(
      'git',
      ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', '-c', 'commit.gpgsign=false', ...args],
      {
        cwd: dir,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    ).trim();
  git('init', '--quiet', '-b', 'main');
  const repo: TestRepo = {
    dir,
    url: pathToFileURL(dir).href,
    git,
    commit(changes, message = 'change') {
      for (const [path, content] of Object.entries(changes)) {
        const full = join(dir, path);
        if (content === null) rmSync(full, { force: true });
        else {
          mkdirSync(dirname(full), { recursive: true });
          writeFileSync(full, content);
        }
      }
      git('add', '-A');
      git('commit', '--quiet', '--allow-empty', '-m', message);
      return git('rev-parse', 'HEAD');
    },
    branches(cases) {
      const data = (text: string) => `data ${Buffer.byteLength(text)}\n${text}\n`;
      let stream = '';
      for (const [branch, changes] of Object.entries(cases)) {
        stream += `commit refs/heads/${branch}\ncommitter Test <test@example.com> 1700000000 +0000\n${data(branch)}from refs/heads/main^0\n`;
        for (const [path, content] of Object.entries(changes))
          stream += content === null ? `D ${path}\n` : `M 100644 inline ${path}\n${data(content)}`;
        stream += '\n';
      }
      execFileSync('git', ['fast-import', '--quiet'], { cwd: dir, input: stream, stdio: ['pipe', 'ignore', 'pipe'] });
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
  repo.commit(files, 'initial');
  return repo;
}

/** The service on a real port with captured logs and its own work folder. */
export interface TestControlPlane {
  readonly cp: ControlPlane;
  readonly server: Listening;
  readonly url: string;
  readonly logs: LogCapture;
  readonly workDir: string;
  /** A fresh organisation with one workspace and a key (distinct per call: the edge limits per key). */
  tenant(label?: string): Promise<Tenant>;
  close(): Promise<void>;
}

export interface Tenant {
  readonly org: string;
  readonly workspace: string;
  readonly key: string;
}

export async function startControlPlane(
  env: Record<string, string> = {},
  options: ControlPlaneOptions = {},
): Promise<TestControlPlane> {
  const workDir = env.BUILD_WORK_DIR ?? mkdtempSync(join(tmpdir(), 'cp-work-'));
  const settings = loadControlPlaneSettings({
    LOG_LEVEL: 'info',
    BUILD_CONCURRENCY: '4',
    SECRETS_KEY: TEST_SECRETS_KEY,
    NODE_ENV: 'test',
    GIT_TIMEOUT_SECONDS: '10',
    ...env,
    BUILD_WORK_DIR: workDir,
  });
  const logs = new LogCapture();
  const log = createLogger(settings.logLevel, logs.stream);
  // Records only unless a test asks for a host: most tests are about the bookkeeping, not the processes.
  const cp = await createControlPlane(settings, log, { host: null, ...options });
  const server = await listen(cp.app, 0, '127.0.0.1');
  return {
    cp,
    server,
    url: server.url,
    logs,
    workDir,
    async tenant(label = 't') {
      const suffix = randomBytes(6).toString('hex');
      const org = `org-${label}-${suffix}`;
      const workspace = `ws-${label}-${suffix}`;
      await cp.keys.addWorkspace(org, workspace);
      return { org, workspace, key: (await cp.keys.createKey(org)).key };
    },
    async close() {
      await server.close();
      await cp.close();
      if (env.BUILD_WORK_DIR === undefined) rmSync(workDir, { recursive: true, force: true });
    },
  };
}

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly json: any;
}

/** Requests to one base URL (the service itself or the edge) with a tenant's headers. */
export function client(base: string, tenant: Pick<Tenant, 'key' | 'workspace'> | null, prefix = '/v2') {
  const send = async (
    method: string,
    path: string,
    body?: unknown,
    extra: Record<string, string> = {},
  ): Promise<Answer> => {
    const headers: Record<string, string> = { ...extra };
    if (tenant) {
      headers['x-api-key'] ??= tenant.key;
      headers['x-tenant-id'] ??= tenant.workspace;
    }
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(base + prefix + path, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let json: unknown = undefined;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      // not JSON: the test looks at `text`
    }
    return { status: res.status, headers: res.headers, text, json };
  };
  return {
    send,
    get: (path: string, extra?: Record<string, string>) => send('GET', path, undefined, extra),
    post: (path: string, body: unknown, extra?: Record<string, string>) => send('POST', path, body, extra),
    patch: (path: string, body: unknown, extra?: Record<string, string>) => send('PATCH', path, body, extra),
    delete: (path: string, extra?: Record<string, string>) => send('DELETE', path, undefined, extra),
  };
}

export type Client = ReturnType<typeof client>;

export function deploymentBody(repoUrl: string, overrides: Record<string, unknown> = {}) {
  return {
    name: `app-${randomUUID().slice(0, 8)}`,
    source: 'github',
    source_config: {
      integration_id: null,
      repo_url: repoUrl,
      deployment_type: 'dev',
      build_on_push: false,
      custom_url: null,
      resource_spec: null,
    },
    source_revision_config: { repo_ref: 'main', langgraph_config_path: 'langgraph.json', image_uri: null },
    secrets: [],
    ...overrides,
  };
}

/** An image deployment: its revisions deploy without git (fast), for tests about the API rather than builds. */
export function imageBody(overrides: Record<string, unknown> = {}) {
  return {
    name: `img-${randomUUID().slice(0, 8)}`,
    source: 'external_docker',
    source_config: { deployment_type: 'dev' },
    source_revision_config: { image_uri: 'docker.io/acme/agent:1' },
    ...overrides,
  };
}

const FINAL = /FAILED|DEPLOYED|SKIPPED|INTERRUPTED/;

/**
 * Polls a revision (10 ms apart at first, backing off to 100 ms) until its status is final or `until` holds; fails the
 * test after `timeoutMs`.
 */
export async function waitForRevision(
  api: Client,
  deploymentId: string,
  revisionId: string,
  until = (s: string) => FINAL.test(s),
  timeoutMs = 15_000,
) {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 10; ; pause = Math.min(100, pause * 1.5)) {
    const res = await api.get(`/deployments/${deploymentId}/revisions/${revisionId}`);
    expect(res.status).toBe(200);
    if (until(res.json.status)) return res.json;
    if (Date.now() > deadline) throw new Error(`revision ${revisionId} still ${res.json.status} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, pause));
  }
}

/** Polls `check` until it returns something truthy. */
export async function eventually<T>(
  check: () => T | Promise<T>,
  timeoutMs = 5000,
  what = 'condition',
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
