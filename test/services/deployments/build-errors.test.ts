import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  client,
  deploymentBody,
  makeRepo,
  startControlPlane,
  waitForRevision,
  type TestControlPlane,
  type TestRepo,
  type Tenant,
} from '../control-plane/helpers.ts';
import { BARE_APP, CONFIG } from './helpers.ts';
import { readEvents, type SseEvent } from './sse.ts';

/**
 * Issue 28, item 2: a syntax error in a graph said `BUILD_FAILED: graphs.agent: Transform failed with 1 error:` and
 * dropped the line that says where; the build log stayed empty until the build ended. Real git repositories made
 * here, real revision processes.
 */

/** Line 3, column 14: `if` where esbuild expects `;`. */
const BROKEN_GRAPH = `export const graph = 1;
function f() {
  const a = 1 if (a) { return 2 }
}
`;

/** Line 11, column 2 (esbuild counts columns from 0): a missing comma, in plain JavaScript. */
const BROKEN_PLAIN = `export const a = 1;
${'\n'.repeat(6)}
const b = {
  c: 1
  d: 2
};
export const graph = b;
`;
const plainConfig = (file: string) => JSON.stringify({ graphs: { echo: `./src/${file}:graph` } });

let t: TestControlPlane;
let tenant: Tenant;
let repo: TestRepo;

beforeAll(async () => {
  repo = makeRepo(BARE_APP);
  repo.branches({
    'syntax-error': { 'graph.ts': BROKEN_GRAPH },
    'in-a-folder': { 'apps/agent/langgraph.json': CONFIG, 'apps/agent/graph.ts': BROKEN_GRAPH },
    'plain-mjs': { 'langgraph.json': plainConfig('plain.mjs'), 'src/plain.mjs': BROKEN_PLAIN },
    'plain-js': { 'langgraph.json': plainConfig('plain.js'), 'src/plain.js': BROKEN_PLAIN },
    'plain-js-module': {
      'langgraph.json': plainConfig('plain.js'),
      'src/plain.js': BROKEN_PLAIN,
      'package.json': JSON.stringify({ name: 'plain', private: true, type: 'module' }),
    },
    'plain-imported': {
      'langgraph.json': plainConfig('entry.mjs'),
      'src/entry.mjs': "export { graph } from './lib/plain.mjs';\n",
      'src/lib/plain.mjs': BROKEN_PLAIN,
    },
  });
  t = await startControlPlane({ BUILD_DELAY_SECONDS: '0.2' }, { host: undefined });
  tenant = await t.tenant();
});

afterAll(async () => {
  await t?.close();
  repo?.remove();
});

describe('a build failure names file, line, column and the compiler message', { timeout: 120_000 }, () => {
  it('syntax error in graph.ts: graph.ts:3:14 and esbuild\'s message, not "Transform failed"', async () => {
    const api = client(t.url, tenant);
    const d = (
      await api.post('/deployments', deploymentBody(repo.url, { source_revision_config: { repo_ref: 'syntax-error' } }))
    ).json;
    const rev = await waitForRevision(api, d.id, d.latest_revision_id, undefined, 60_000);
    expect(rev.status).toBe('BUILD_FAILED');
    expect(rev.status_message).toBe('BUILD_FAILED: graphs.echo: graph.ts:3:14: Expected ";" but found "if"');
    // The build log says which step failed, with the same line and every step's time.
    const log = (await api.get(`/deployments/${d.id}/revisions/${d.latest_revision_id}/build_log`)).json;
    expect(log.steps.map((s: { name: string; status: string }) => `${s.name} ${s.status}`)).toEqual([
      'clone done',
      'config done',
      'install done',
      'artifact done',
      'load check failed',
    ]);
    for (const s of log.steps) expect(s.duration_ms).toBeGreaterThanOrEqual(0);
    expect(log.build_log).toContain('==> load check failed in ');
    expect(log.build_log).toContain('graph.ts:3:14: Expected ";" but found "if"');
  });

  it('an app in a folder of its repository: the path from the repository root', async () => {
    const api = client(t.url, tenant);
    const body = deploymentBody(repo.url, {
      source_revision_config: { repo_ref: 'in-a-folder', langgraph_config_path: 'apps/agent/langgraph.json' },
    });
    const d = (await api.post('/deployments', body)).json;
    const rev = await waitForRevision(api, d.id, d.latest_revision_id, undefined, 60_000);
    expect(rev.status_message).toBe('BUILD_FAILED: graphs.echo: apps/agent/graph.ts:3:14: Expected ";" but found "if"');
  });
});

describe('a syntax error in plain JavaScript: the same file:line:col: message', { timeout: 120_000 }, () => {
  const expected = (file: string) => `BUILD_FAILED: graphs.echo: ${file}:11:2: Expected "}" but found "d"`;
  for (const [branch, file] of [
    ['plain-mjs', 'src/plain.mjs'],
    ['plain-js', 'src/plain.js'],
    ['plain-js-module', 'src/plain.js'],
    ['plain-imported', 'src/lib/plain.mjs'],
  ] as const)
    it(`${branch}: ${file}:11:2`, async () => {
      const api = client(t.url, tenant);
      const body = deploymentBody(repo.url, { source_revision_config: { repo_ref: branch } });
      const d = (await api.post('/deployments', body)).json;
      const rev = await waitForRevision(api, d.id, d.latest_revision_id, undefined, 60_000);
      expect(rev.status_message).toBe(expected(file));
    });
});

describe('the build log streams its steps as the build runs', { timeout: 120_000 }, () => {
  it('?follow=true: steps arrive before the build ends, then one end event with the final status', async () => {
    const api = client(t.url, tenant);
    const d = (await api.post('/deployments', deploymentBody(repo.url))).json;
    const res = await fetch(
      `${t.url}/api-host/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/build_log?follow=true`,
      {
        headers: { 'x-api-key': tenant.key, 'x-tenant-id': tenant.workspace },
      },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events: SseEvent[] = [];
    let statusAtFirstStep: string | null = null;
    await readEvents(res, async (e) => {
      events.push(e);
      if (e.event === 'step' && statusAtFirstStep === null)
        statusAtFirstStep = (await api.get(`/deployments/${d.id}/revisions/${d.latest_revision_id}`)).json.status;
      return e.event === 'end';
    });
    // When the first step arrived, the revision was still being built.
    expect(statusAtFirstStep).toMatch(/^(AWAITING_BUILD|BUILDING)$/);
    const steps = events.filter((e) => e.event === 'step').map((e) => `${e.data.name} ${e.data.status}`);
    expect(steps).toContain('clone done');
    expect(steps).toContain('load check done');
    expect(steps.indexOf('clone done')).toBeLessThan(steps.indexOf('load check done'));
    expect(events.filter((e) => e.event === 'status').map((e) => e.data.status)).toContain('BUILDING');
    expect(events.at(-1)).toMatchObject({ event: 'end', data: { status: 'DEPLOYED' } });
    expect(
      events
        .filter((e) => e.event === 'log')
        .map((e) => e.data.text)
        .join(''),
    ).toMatch(/==> clone done in \d+\.\d\d s/);
  });

  it('another workspace following the log: 404, as every read of the deployment', async () => {
    const api = client(t.url, tenant);
    const d = (await api.post('/deployments', deploymentBody(repo.url))).json;
    const other = client(t.url, await t.tenant('other'));
    const res = await other.get(`/deployments/${d.id}/revisions/${d.latest_revision_id}/build_log?follow=true`);
    expect(res.status).toBe(404);
    expect(
      (await api.get(`/deployments/${d.id}/revisions/${d.latest_revision_id}/build_log?follow=maybe`)).status,
    ).toBe(422);
  });
});
