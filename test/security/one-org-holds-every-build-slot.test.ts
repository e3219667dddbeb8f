import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Builder } from '../../src/services/control-plane/builds/builder.ts';
import { GitError } from '../../src/services/control-plane/builds/git.ts';
import {
  client,
  deploymentBody,
  startControlPlane,
  waitForRevision,
  type TestControlPlane,
} from '../services/control-plane/helpers.ts';

/**
 * Finding "two workspaces' slow builds held both build slots" (issue 34, attack 11): the build queue took turns per
 * workspace, so one organisation with two workspaces held both of BUILD_CONCURRENCY=2 and a third tenant's 3 s build
 * took 80 s. Turns are now per organisation: its workspaces together hold at most BUILD_CONCURRENCY_PER_TENANT slots,
 * and another organisation's build starts at once. Builds here never end by themselves (a builder that waits for its
 * cancel), so "at once" is "while the others still hold theirs".
 */
const STUCK: Builder = {
  build: (_req, signal) =>
    new Promise((_, reject) => signal.addEventListener('abort', () => reject(new GitError('aborted', 'stopped')))),
};

let t: TestControlPlane;
beforeAll(async () => {
  t = await startControlPlane({ BUILD_CONCURRENCY: '2', BUILD_CONCURRENCY_PER_TENANT: '1' }, { builder: STUCK });
});
afterAll(() => t?.close());

describe('one organisation with many workspaces', () => {
  it("holds one slot; another organisation's build starts while its builds wait", async () => {
    const first = await t.tenant('greedy');
    const second = `${first.workspace}-2`;
    await t.cp.keys.addWorkspace(first.org, second);
    const greedy = [];
    for (const workspace of [first.workspace, second]) {
      const api = client(t.url, { key: first.key, workspace });
      const d = (await api.post('/deployments', deploymentBody('https://example.com/r.git'))).json;
      greedy.push({ api, id: d.id as string, rev: d.latest_revision_id as string });
    }
    const other = client(t.url, await t.tenant('other'));
    const d = (await other.post('/deployments', deploymentBody('https://example.com/r.git'))).json;
    await waitForRevision(other, d.id, d.latest_revision_id, (s) => s === 'BUILDING', 5000);
    const statuses = [];
    for (const g of greedy) statuses.push((await g.api.get(`/deployments/${g.id}/revisions/${g.rev}`)).json.status);
    expect(statuses.sort()).toEqual(['BUILDING', 'QUEUED']);
  });
});
