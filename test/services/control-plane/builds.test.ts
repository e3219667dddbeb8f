import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';
import {
  client,
  deploymentBody,
  eventually,
  imageBody,
  makeRepo,
  startControlPlane,
  waitForRevision,
  type TestControlPlane,
  type TestRepo,
} from './helpers.ts';

/**
 * Builds from real temporary git repositories, driven through the edge:
 * the status sequence and its times, the commit, each failure reason, the
 * per-step delay, the concurrency limit, superseding and delete.
 */

let repo: TestRepo;
/** BUILD_DELAY_SECONDS=0 */
let fast: TestControlPlane;
/** BUILD_DELAY_SECONDS=0.2: a revision spends 200 ms before each move. */
let slow: TestControlPlane;
let gwFast: TestGateway;
let gwSlow: TestGateway;

beforeAll(async () => {
  repo = makeRepo();
  repo.branches({
    broken: { 'src/agent.ts': null },
    'not-json': { 'langgraph.json': 'not json' },
    'no-graphs': { 'langgraph.json': '{}' },
    'bad-spec': { 'langgraph.json': '{"graphs": {"agent": "src/agent.ts"}}' },
    'no-auth': { 'src/auth.ts': null },
  });
  [fast, slow] = await Promise.all([startControlPlane(), startControlPlane({ BUILD_DELAY_SECONDS: '0.2' })]);
  [gwFast, gwSlow] = await Promise.all([
    startTestGateway({ CONTROL_PLANE_URL: fast.url }),
    startTestGateway({ CONTROL_PLANE_URL: slow.url }),
  ]);
});

afterAll(async () => {
  await Promise.all([gwFast?.close(), gwSlow?.close()]);
  await Promise.all([fast?.close(), slow?.close()]);
  repo?.remove();
});

const PIPELINE = ['QUEUED', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED'];
const folder = (svc: TestControlPlane, deploymentId: string, revisionId?: string) =>
  revisionId === undefined ? join(svc.workDir, 'us', deploymentId) : join(svc.workDir, 'us', deploymentId, revisionId);

describe('a successful build', () => {
  it('moves through every status in order, each with its time; records the commit; the deployment becomes READY', async () => {
    const api = client(gwFast.url, await fast.tenant(), '/api-host/v2');
    const d = (await api.post('/deployments', deploymentBody(repo.url))).json;
    const rev = await waitForRevision(api, d.id, d.latest_revision_id);
    expect(rev.status).toBe('DEPLOYED');
    expect(rev.status_message).toBeNull();
    expect(rev.status_history.map((s: { status: string }) => s.status)).toEqual(PIPELINE);
    const times = rev.status_history.map((s: { at: string }) => Date.parse(s.at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(times[0]).toBe(Date.parse(rev.created_at));
    expect(times.at(-1)).toBe(Date.parse(rev.updated_at));
    expect(rev.source_revision_config.repo_commit_sha).toBe(repo.git('rev-parse', 'main'));
    expect(rev.graphs).toEqual({ agent: './src/agent.ts:graph' });
    expect(rev.auth_path).toBe('./src/auth.ts:auth');
    expect((await api.get(`/deployments/${d.id}`)).json).toMatchObject({ status: 'READY', active_revision_id: rev.id });
    expect(existsSync(join(folder(fast, d.id, rev.id), 'src/agent.ts'))).toBe(true);
  });

  it('a newer deployed revision takes over; the older work folder goes', async () => {
    const api = client(gwFast.url, await fast.tenant());
    const d = (await api.post('/deployments', deploymentBody(repo.url))).json;
    await waitForRevision(api, d.id, d.latest_revision_id);
    const next = (
      await api.patch(`/deployments/${d.id}`, { source_revision_config: { repo_ref: repo.git('rev-parse', 'main') } })
    ).json;
    const rev = await waitForRevision(api, d.id, next.latest_revision_id);
    expect(rev.status).toBe('DEPLOYED');
    expect((await api.get(`/deployments/${d.id}`)).json.active_revision_id).toBe(rev.id);
    expect(existsSync(folder(fast, d.id, rev.id))).toBe(true);
    await eventually(() => !existsSync(folder(fast, d.id, d.latest_revision_id)), 2000, 'older folder removed');
  });
});

describe('each failure reason, as BUILD_FAILED with a message, through the edge', () => {
  const cases: { what: string; repo: () => string; ref?: string; config?: string; message: string | RegExp }[] = [
    {
      what: 'a graph file missing at the ref',
      repo: () => repo.url,
      ref: 'broken',
      message: 'BUILD_FAILED: graphs.agent: file src/agent.ts not found at ref broken',
    },
    {
      what: 'an unknown ref',
      repo: () => repo.url,
      ref: 'nope',
      message: 'BUILD_FAILED: repo_ref: "nope" is not a branch, tag or commit of {repo}',
    },
    {
      what: 'an unknown commit',
      repo: () => repo.url,
      ref: 'abcdef1234567',
      message: 'BUILD_FAILED: repo_ref: commit abcdef1234567 not found in {repo}',
    },
    {
      what: 'no config at the path',
      repo: () => repo.url,
      config: 'nope/langgraph.json',
      message: 'BUILD_FAILED: langgraph_config_path: file nope/langgraph.json not found at ref main',
    },
    {
      what: 'an unreachable source',
      repo: () => '/nonexistent/repo.git',
      message: /^BUILD_FAILED: repo_url: cannot read repository \/nonexistent\/repo\.git: /,
    },
    {
      what: 'an unreachable remote',
      repo: () => 'http://127.0.0.1:9/repo.git',
      message: /^BUILD_FAILED: repo_url: cannot read repository http:\/\/127\.0\.0\.1:9\/repo\.git: /,
    },
  ];

  it.each(cases)('$what', async ({ repo: url, ref = 'main', config = 'langgraph.json', message }) => {
    const api = client(gwFast.url, await fast.tenant());
    const d = (
      await api.post(
        '/deployments',
        deploymentBody(url(), { source_revision_config: { repo_ref: ref, langgraph_config_path: config } }),
      )
    ).json;
    const rev = await waitForRevision(api, d.id, d.latest_revision_id);
    expect(rev.status).toBe('BUILD_FAILED');
    if (typeof message === 'string') expect(rev.status_message).toBe(message.replace('{repo}', url()));
    else expect(rev.status_message).toMatch(message);
    expect(rev.status_history.map((s: { status: string }) => s.status)).toEqual([
      'QUEUED',
      'AWAITING_BUILD',
      'BUILDING',
      'BUILD_FAILED',
    ]);
    expect(rev.status_history.at(-1).message).toBe(rev.status_message);
    expect((await api.get(`/deployments/${d.id}`)).json).toMatchObject({
      status: 'AWAITING_DATABASE',
      active_revision_id: null,
    });
    expect(existsSync(folder(fast, d.id, rev.id))).toBe(false);
  });

  it('each invalid app config (one branch per case)', async () => {
    const api = client(gwFast.url, await fast.tenant());
    const bad: [string, string][] = [
      ['not-json', 'BUILD_FAILED: langgraph.json: not valid JSON ('],
      ['no-graphs', 'BUILD_FAILED: langgraph.json: "graphs" is required'],
      ['bad-spec', 'BUILD_FAILED: graphs.agent: "src/agent.ts" must be "<file>:<export>"'],
      ['no-auth', 'BUILD_FAILED: auth.path: file src/auth.ts not found at ref no-auth'],
    ];
    const created = await Promise.all(
      bad.map(
        async ([ref]) =>
          (await api.post('/deployments', deploymentBody(repo.url, { source_revision_config: { repo_ref: ref } })))
            .json,
      ),
    );
    for (const [i, d] of created.entries()) {
      const rev = await waitForRevision(api, d.id, d.latest_revision_id);
      expect(rev.status).toBe('BUILD_FAILED');
      expect(rev.status_message.startsWith(bad[i]![1])).toBe(true);
    }
  });
});

describe('background builds', () => {
  it('the API never waits for a build', async () => {
    const stuck = await startControlPlane({ BUILD_DELAY_SECONDS: '30' });
    try {
      const api = client(stuck.url, await stuck.tenant());
      const started = Date.now();
      const d = (await api.post('/deployments', deploymentBody(repo.url))).json;
      expect(Date.now() - started).toBeLessThan(5000);
      expect((await api.get(`/deployments/${d.id}/revisions/${d.latest_revision_id}`)).json.status).toBe('QUEUED');
      expect(stuck.cp.queue.has(d.latest_revision_id)).toBe(true);
    } finally {
      await stuck.close();
    }
  });

  it('BUILD_DELAY_SECONDS is spent before every move', async () => {
    const api = client(gwSlow.url, await slow.tenant());
    const d = (await api.post('/deployments', imageBody())).json;
    const rev = await waitForRevision(api, d.id, d.latest_revision_id);
    expect(rev.status_history.map((s: { status: string }) => s.status)).toEqual(PIPELINE);
    const times = rev.status_history.map((s: { at: string }) => Date.parse(s.at));
    for (let i = 1; i < times.length; i++) expect(times[i] - times[i - 1]).toBeGreaterThanOrEqual(195);
  });

  it('at most BUILD_CONCURRENCY revisions are in progress at once', async () => {
    const one = await startControlPlane({ BUILD_CONCURRENCY: '1', BUILD_DELAY_SECONDS: '0.05' });
    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, one.cp.queue.size.running)), 5);
    try {
      const api = client(one.url, await one.tenant());
      const created = await Promise.all([1, 2, 3].map(async () => (await api.post('/deployments', imageBody())).json));
      const revs = [];
      for (const d of created) revs.push(await waitForRevision(api, d.id, d.latest_revision_id));
      expect(revs.map((r) => r.status)).toEqual(['DEPLOYED', 'DEPLOYED', 'DEPLOYED']);
      expect(most).toBe(1);
      const span = (r: { status_history: { status: string; at: string }[] }) => {
        const at = (s: string) => Date.parse(r.status_history.find((h) => h.status === s)!.at);
        return [at('AWAITING_BUILD'), at('DEPLOYED')] as const;
      };
      const spans = revs.map(span).sort((a, b) => a[0] - b[0]);
      for (let i = 1; i < spans.length; i++) expect(spans[i]![0]).toBeGreaterThanOrEqual(spans[i - 1]![1]);
    } finally {
      clearInterval(sampler);
      await one.close();
    }
  });

  it('a newer revision supersedes an unfinished one: SKIPPED while queued', async () => {
    const stuck = await startControlPlane({ BUILD_DELAY_SECONDS: '30' });
    try {
      const api = client(stuck.url, await stuck.tenant());
      const d = (await api.post('/deployments', imageBody())).json;
      const next = (
        await api.patch(`/deployments/${d.id}`, { source_revision_config: { image_uri: 'docker.io/acme/agent:2' } })
      ).json;
      const first = (await api.get(`/deployments/${d.id}/revisions/${d.latest_revision_id}`)).json;
      expect(first.status).toBe('SKIPPED');
      expect(first.status_message).toBe(`SKIPPED: superseded by revision ${next.latest_revision_id}`);
      expect(first.status_history.map((s: { status: string }) => s.status)).toEqual(['QUEUED', 'SKIPPED']);
      expect(stuck.cp.queue.has(d.latest_revision_id)).toBe(false); // its run is gone
      expect(stuck.cp.queue.has(next.latest_revision_id)).toBe(true);
    } finally {
      await stuck.close();
    }
  });

  it('a newer revision supersedes an unfinished one: INTERRUPTED once work started', async () => {
    const api = client(gwSlow.url, await slow.tenant());
    const d = (await api.post('/deployments', deploymentBody(repo.url))).json;
    await waitForRevision(api, d.id, d.latest_revision_id, (s) => s === 'BUILDING');
    const next = (await api.patch(`/deployments/${d.id}`, { source_revision_config: { repo_ref: 'main' } })).json;
    const first = (await api.get(`/deployments/${d.id}/revisions/${d.latest_revision_id}`)).json;
    expect(first.status).toBe('INTERRUPTED');
    expect(first.status_message).toBe(`INTERRUPTED: superseded by revision ${next.latest_revision_id}`);
    expect(existsSync(folder(slow, d.id, d.latest_revision_id))).toBe(false);
    expect((await waitForRevision(api, d.id, next.latest_revision_id)).status).toBe('DEPLOYED');
  });

  it('DELETE interrupts the running build and removes its work folders', async () => {
    const api = client(gwSlow.url, await slow.tenant());
    const d = (await api.post('/deployments', deploymentBody(repo.url))).json;
    const dir = folder(slow, d.id, d.latest_revision_id);
    await eventually(() => existsSync(join(dir, 'langgraph.json')), 5000, 'checkout');
    expect(slow.cp.queue.has(d.latest_revision_id)).toBe(true);
    expect((await api.delete(`/deployments/${d.id}`)).status).toBe(204);
    expect(slow.cp.queue.has(d.latest_revision_id)).toBe(false);
    expect(existsSync(folder(slow, d.id))).toBe(false);
    await slow.logs.waitFor((l) => l.msg === 'build interrupted by delete' && l.deploymentId === d.id);
    await new Promise((r) => setTimeout(r, 250)); // past the next steps: nothing comes back
    expect(existsSync(folder(slow, d.id))).toBe(false);
    expect((await api.get(`/deployments/${d.id}/revisions/${d.latest_revision_id}`)).status).toBe(404);
  });
});
