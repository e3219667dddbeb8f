import { existsSync, readFileSync } from 'node:fs';
import { Client } from '@langchain/langgraph-sdk';
import { httpUrl } from '../../helpers/target-url.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  client,
  deploymentBody,
  eventually,
  makeRepo,
  startControlPlane,
  waitForRevision,
  type TestControlPlane,
  type TestRepo,
  type Tenant,
} from '../control-plane/helpers.ts';
import { deployClient } from '../../../examples/deploy-client.ts';
import {
  alive,
  ask,
  BARE_APP,
  deployed,
  graphSource,
  PACKAGED_APP,
  pathForwarder,
  target,
  untilServing,
} from './helpers.ts';

/**
 * Every DEPLOYED revision serves its own Agent Server process: built from a
 * real git repository made here, checked by loading it, routed, rolled over
 * with a drain, restarted after a crash, redeployed and removed. The SDK,
 * unmodified, talks straight to the route's target (the edge in front is
 * tested with the edge).
 */

let t: TestControlPlane;
let tenant: Tenant;
let bare: TestRepo;
let packaged: TestRepo;
/** Read at every `url` shown: the addressing option is a getter (PUBLIC_URL may be known only once the edge listens). */
let publicUrl = 'http://edge.test:8080';

beforeAll(async () => {
  bare = makeRepo(BARE_APP);
  bare.branches({
    v2: { 'graph.ts': graphSource('v2') },
    broken: { 'graph.ts': graphSource('v3', "import 'no-such-package-for-this-test';\n") },
  });
  packaged = makeRepo(PACKAGED_APP);
  t = await startControlPlane(
    { DRAIN_SECONDS: '5', BUILD_ON_PUSH_INTERVAL_SECONDS: '1' },
    { host: undefined, addressing: () => ({ publicUrl, domain: null }) },
  );
  tenant = await t.tenant();
});

afterAll(async () => {
  await t?.close();
  bare?.remove();
  packaged?.remove();
});

describe('a deployment serves its app', { timeout: 120_000 }, () => {
  it('without and with a package.json: DEPLOYED, url, a streamed run of that graph, /docs, logs with deployment and revision', async () => {
    const api = client(t.url, tenant);
    const a = (
      await api.post('/deployments', deploymentBody(bare.url, { secrets: [{ name: 'TOKEN', value: 'alpha' }] }))
    ).json;
    const b = (
      await api.post('/deployments', deploymentBody(packaged.url, { secrets: [{ name: 'TOKEN', value: 'beta' }] }))
    ).json;
    expect(a.url).toBeNull();
    await deployed(api, a.id, a.latest_revision_id);
    await deployed(api, b.id, b.latest_revision_id);

    for (const [d, token] of [
      [a, 'alpha'],
      [b, 'beta'],
    ] as const) {
      expect((await api.get(`/deployments/${d.id}`)).json.url).toBe(`http://edge.test:8080/deployments/${d.id}`);
      const route = t.cp.routes.get(d.id)!;
      expect(route).toMatchObject({ deploymentId: d.id, revisionId: d.latest_revision_id, tenantId: tenant.workspace });
      expect(route.target).toMatch(/^unix:\/.+\/agent\.sock$/);
      // Each graph sees its own secret only, and the env of its langgraph.json.
      const sdk = new Client({ apiUrl: await httpUrl(route.target), apiKey: tenant.key });
      const events: { event: string; data: unknown }[] = [];
      for await (const e of sdk.runs.stream(null, 'echo', { input: { text: 'streamed' }, streamMode: 'values' }))
        events.push(e);
      const last = events.filter((e) => e.event === 'values').at(-1)?.data as { answer: string };
      expect(last.answer).toBe(`v1 hello ${token}: streamed`);
      const docs = await fetch(`${await httpUrl(route.target)}/docs`);
      expect(docs.status).toBe(200);
      await docs.body?.cancel();
      await t.logs.waitFor(
        (l) => l.deployment === d.id && l.revision === d.latest_revision_id && l.msg === 'agent server ready',
      );
    }

    // A key of another organisation is refused by the deployment.
    const other = await t.tenant('other');
    const refused = await fetch(`${await httpUrl(target(t, a.id))}/assistants/search`, {
      method: 'POST',
      headers: { 'x-api-key': other.key, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(refused.status).toBe(401);
    await refused.body?.cancel();

    // The install ran for the packaged app only; its output is in the build log, between the steps' lines.
    const logA = (await api.get(`/deployments/${a.id}/revisions/${a.latest_revision_id}/build_log`)).json;
    expect(logA).toMatchObject({ revision_id: a.latest_revision_id, status: 'DEPLOYED' });
    expect(logA.steps.map((s: { name: string }) => s.name)).toEqual([
      'clone',
      'config',
      'install',
      'artifact',
      'load check',
    ]);
    expect(logA.build_log).toMatch(/^==> clone\n/);
    expect(logA.build_log).toContain('==> install\n(no package.json next to the app config: nothing to install)\n');
    expect(logA.build_log).not.toContain('$ npm');
    const logB = (await api.get(`/deployments/${b.id}/revisions/${b.latest_revision_id}/build_log`)).json;
    expect(logB.build_log).toMatch(/^==> install\n\$ npm install/m);
  });

  it("npm ci with a lockfile; an install that fails fails the revision with npm's reason and keeps its log", async () => {
    const api = client(t.url, tenant);
    const lock = JSON.stringify({
      name: 'packaged-app',
      lockfileVersion: 3,
      requires: true,
      packages: { '': { name: 'packaged-app' } },
    });
    packaged.branches({
      locked: { 'package-lock.json': lock },
      unmet: {
        'package.json': JSON.stringify({
          name: 'packaged-app',
          private: true,
          type: 'module',
          dependencies: { missing: 'file:./no-such-package.tgz' },
        }),
      },
    });
    const locked = (
      await api.post('/deployments', deploymentBody(packaged.url, { source_revision_config: { repo_ref: 'locked' } }))
    ).json;
    await deployed(api, locked.id, locked.latest_revision_id);
    const log = (await api.get(`/deployments/${locked.id}/revisions/${locked.latest_revision_id}/build_log`)).json;
    expect(log.build_log).toMatch(/^==> install\n\$ npm ci /m);

    const unmet = (
      await api.post('/deployments', deploymentBody(packaged.url, { source_revision_config: { repo_ref: 'unmet' } }))
    ).json;
    const rev = await waitForRevision(api, unmet.id, unmet.latest_revision_id, undefined, 60_000);
    expect(rev.status).toBe('BUILD_FAILED');
    expect(rev.status_message).toMatch(
      /^BUILD_FAILED: npm install failed: .*no such file or directory, open '\.\/no-such-package\.tgz'$/,
    );
    const failedLog = (await api.get(`/deployments/${unmet.id}/revisions/${unmet.latest_revision_id}/build_log`)).json;
    expect(failedLog.build_log).toMatch(/^==> install\n\$ npm install /m);
    expect(failedLog.build_log).toMatch(/^==> install failed in \d+\.\d\d s: npm install failed: /m);
    expect(t.cp.routes.get(unmet.id)).toBeUndefined();
    expect((await api.get(`/deployments/${unmet.id}`)).json.url).toBeNull();
  });

  it('a rollover moves traffic with no failed request, the open stream ends cleanly, the old process drains and stops', async () => {
    const api = client(t.url, tenant);
    const d = (await api.post('/deployments', deploymentBody(bare.url))).json;
    await deployed(api, d.id, d.latest_revision_id);
    const oldProc = t.cp.serving!.current(d.id)!.proc!;

    const sdk = new Client({ apiUrl: await httpUrl(oldProc.target), apiKey: tenant.key });
    const stream = (async () => {
      const events: { event: string; data: unknown }[] = [];
      for await (const e of sdk.runs.stream(null, 'echo', {
        input: { text: 'slow' },
        streamMode: 'values',
        config: { configurable: { delay_ms: 1500 } },
      }))
        events.push(e);
      return events;
    })();

    let stop = false;
    const answers: string[] = [];
    const failures: string[] = [];
    const loop = (async () => {
      while (!stop) {
        try {
          answers.push(await ask(target(t, d.id), tenant));
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
    })();

    const next = (await api.patch(`/deployments/${d.id}`, { source_revision_config: { repo_ref: 'v2' } })).json;
    await deployed(api, d.id, next.latest_revision_id);
    await eventually(() => answers.at(-1)?.startsWith('v2'), 30_000, 'answers from v2');
    stop = true;
    await loop;
    expect(failures).toEqual([]);
    expect(answers[0]).toMatch(/^v1 /);

    const events = await stream;
    const last = events.filter((e) => e.event === 'values').at(-1)?.data as { answer: string };
    expect(last.answer).toBe('v1 hello no-token: slow');
    expect(events.some((e) => e.event === 'error')).toBe(false);
    expect((await oldProc.exited).requested).toBe(true);
    expect(alive(oldProc.pid)).toBe(false);
  });

  it('a graph that cannot import fails the revision with the reason; the old revision keeps serving', async () => {
    const api = client(t.url, tenant);
    const d = (await api.post('/deployments', deploymentBody(bare.url))).json;
    await deployed(api, d.id, d.latest_revision_id);
    const before = target(t, d.id);
    const next = (await api.patch(`/deployments/${d.id}`, { source_revision_config: { repo_ref: 'broken' } })).json;
    const rev = await waitForRevision(api, d.id, next.latest_revision_id, undefined, 60_000);
    expect(rev.status).toBe('BUILD_FAILED');
    expect(rev.status_message).toMatch(/^BUILD_FAILED: graphs\.echo: .*no-such-package-for-this-test/);
    expect(rev.status_message).not.toMatch(/\n/);
    expect(rev.status_message).not.toContain(t.workDir);
    expect(target(t, d.id)).toBe(before);
    expect(await ask(before, tenant)).toMatch(/^v1 /);
    expect((await api.get(`/deployments/${d.id}`)).json.active_revision_id).toBe(d.latest_revision_id);
  });

  it('redeploy serves the first revision again from its kept build, without a new revision', async () => {
    const api = client(t.url, tenant);
    const d = (await api.post('/deployments', deploymentBody(bare.url))).json;
    await deployed(api, d.id, d.latest_revision_id);
    const next = (await api.patch(`/deployments/${d.id}`, { source_revision_config: { repo_ref: 'v2' } })).json;
    await deployed(api, d.id, next.latest_revision_id);
    await untilServing(t, d.id, tenant, 'v2');

    const res = await api.post(`/deployments/${d.id}/revisions/${d.latest_revision_id}/redeploy`, {});
    expect(res.status).toBe(200);
    await untilServing(t, d.id, tenant, 'v1');
    const now = (await api.get(`/deployments/${d.id}`)).json;
    expect(now.active_revision_id).toBe(d.latest_revision_id);
    expect((await api.get(`/deployments/${d.id}/revisions`)).json.resources).toHaveLength(2);
    expect(t.cp.routes.get(d.id)?.revisionId).toBe(d.latest_revision_id);

    const missing = await api.post(`/deployments/${d.id}/revisions/00000000-0000-0000-0000-000000000000/redeploy`, {});
    expect(missing.status).toBe(404);
  });

  it('kill -9 of a deployment process: restarted and serving again within seconds; another deployment unaffected', async () => {
    const api = client(t.url, tenant);
    const body = deploymentBody(bare.url);
    const d = (
      await api.post('/deployments', {
        ...body,
        source_config: { ...body.source_config, resource_spec: { memory_mb: 96 } },
      })
    ).json;
    const other = (await api.post('/deployments', deploymentBody(bare.url))).json;
    await deployed(api, d.id, d.latest_revision_id);
    await deployed(api, other.id, other.latest_revision_id);
    const otherTarget = target(t, other.id);
    const pid = t.cp.serving!.current(d.id)!.proc!.pid!;
    // Its memory bound is the deployment's resource_spec.memory_mb.
    expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')).toContain('--max-old-space-size=96');
    process.kill(pid, 'SIGKILL');
    await t.logs.waitFor(
      (l) => l.msg === 'revision process stopped unexpectedly; restarting' && l.deploymentId === d.id,
      10_000,
    );
    const line = t.logs
      .lines()
      .find((l) => l.msg === 'revision process stopped unexpectedly; restarting' && l.deploymentId === d.id);
    expect(line?.reason).toBe('killed by SIGKILL');
    expect(await ask(otherTarget, tenant)).toMatch(/^v1 /);
    await eventually(
      () => t.cp.serving!.current(d.id)?.proc?.pid !== undefined && t.cp.serving!.current(d.id)?.proc?.pid !== pid,
      20_000,
      'restart',
    );
    expect(await untilServing(t, d.id, tenant, 'v1')).toMatch(/^v1 /);
  });

  it('a process that keeps dying is restarted with backoff and shows it on the deployment, with the reason', async () => {
    const api = client(t.url, tenant);
    const d = (await api.post('/deployments', deploymentBody(bare.url))).json;
    await deployed(api, d.id, d.latest_revision_id);
    for (let crash = 1; crash <= 3; crash++) {
      const proc = await eventually(() => t.cp.serving!.current(d.id)?.proc, 30_000, `process before crash ${crash}`);
      await ask(proc.target, tenant, 'exit').catch(() => '');
      await proc.exited;
    }
    const shown = await eventually(
      async () => (await api.get(`/deployments/${d.id}`)).json.serving_error as string | undefined,
      10_000,
      'serving_error',
    );
    expect(shown).toMatch(
      new RegExp(
        `^the process of revision ${d.latest_revision_id} keeps stopping \\(3 times in a row, last: exit code 7`,
      ),
    );
    const logged = t.logs
      .lines()
      .filter((l) => l.msg === 'revision process stopped unexpectedly; restarting' && l.deploymentId === d.id);
    expect(logged.map((l) => [l.crashes, l.delay])).toEqual([
      [1, 500],
      [2, 1000],
      [3, 2000],
    ]);
    expect(await untilServing(t, d.id, tenant, 'v1')).toMatch(/^v1 /);
  });

  it('delete: the process stops, the route and the work folder go', async () => {
    const api = client(t.url, tenant);
    const d = (await api.post('/deployments', deploymentBody(bare.url))).json;
    await deployed(api, d.id, d.latest_revision_id);
    const proc = t.cp.serving!.current(d.id)!.proc!;
    expect(existsSync(t.cp.builds.folderOf(d.id))).toBe(true);
    expect((await api.delete(`/deployments/${d.id}`)).status).toBe(204);
    expect(t.cp.routes.get(d.id)).toBeUndefined();
    expect(t.cp.serving!.current(d.id)).toBeUndefined();
    await proc.exited;
    expect(alive(proc.pid)).toBe(false);
    expect(existsSync(t.cp.builds.folderOf(d.id))).toBe(false);
  });

  it('build_on_push: a commit on the tracked branch becomes a DEPLOYED revision', async () => {
    const repo = makeRepo(BARE_APP);
    try {
      const api = client(t.url, tenant);
      const body = deploymentBody(repo.url);
      const d = (
        await api.post('/deployments', { ...body, source_config: { ...body.source_config, build_on_push: true } })
      ).json;
      await deployed(api, d.id, d.latest_revision_id);
      const sha = repo.commit({ 'graph.ts': graphSource('pushed') });
      const latest = await eventually(
        async () => {
          const cur = (await api.get(`/deployments/${d.id}`)).json;
          return cur.latest_revision_id !== d.latest_revision_id ? cur.latest_revision_id : null;
        },
        20_000,
        'a revision for the push',
      );
      const rev = await deployed(api, d.id, latest);
      expect(rev.source_revision_config.repo_commit_sha).toBe(sha);
      await untilServing(t, d.id, tenant, 'pushed');
      // No new commit: no new revision.
      await new Promise((r) => setTimeout(r, 2500));
      expect((await api.get(`/deployments/${d.id}/revisions`)).json.resources).toHaveLength(2);
    } finally {
      repo.remove();
    }
  });

  it('examples/deploy-client.ts creates, polls, calls the url with the SDK, patches and deletes', async () => {
    const edge = await pathForwarder(t.cp.routes);
    publicUrl = edge.url;
    const lines: string[] = [];
    const errors: string[] = [];
    const code = await deployClient(
      [
        '--url',
        t.url,
        '--api-key',
        tenant.key,
        '--tenant-id',
        tenant.workspace,
        '--repo-url',
        bare.url,
        '--next-ref',
        'v2',
        '--poll-interval',
        '0.2',
        '--input',
        '{"text":"from the client"}',
      ],
      {},
      { log: (l) => lines.push(l), err: (l) => errors.push(l) },
    );
    expect(errors).toEqual([]);
    expect(code).toBe(0);
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^url ${edge.url}/deployments/[0-9a-f-]{36} docs=`)));
    expect(lines).toContain(
      'called graph=echo answer={"text":"from the client","answer":"v1 hello no-token: from the client"}',
    );
    expect(lines.at(-1)).toBe('result ok exit=0');
    publicUrl = 'http://edge.test:8080';
    await edge.close();
  });
});
