import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Builder } from '../../../src/services/control-plane/builds/builder.ts';
import { GitError } from '../../../src/services/control-plane/builds/git.ts';
import { client, deploymentBody, startControlPlane, waitForRevision, type TestControlPlane } from './helpers.ts';

/**
 * Finding "one global FIFO of builds" (issue 25, attack 9): two slow builds of one tenant held every build slot
 * and every other tenant's build waited behind them. Here builds never end by themselves (a builder that waits for
 * its cancel): a tenant with three deployments has one building, and another tenant's build starts at once.
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

describe('builds across tenants', () => {
  it("one tenant's stuck builds leave a slot to another tenant", async () => {
    const busy = client(t.url, await t.tenant('busy'));
    const revs = [];
    for (let i = 0; i < 3; i++) {
      const d = (await busy.post('/deployments', deploymentBody('https://example.com/r.git'))).json;
      revs.push([d.id, d.latest_revision_id] as const);
    }
    const other = client(t.url, await t.tenant('other'));
    const d = (await other.post('/deployments', deploymentBody('https://example.com/r.git'))).json;
    await waitForRevision(other, d.id, d.latest_revision_id, (s) => s === 'BUILDING');
    const statuses = [];
    for (const [id, rev] of revs) statuses.push((await busy.get(`/deployments/${id}/revisions/${rev}`)).json.status);
    expect(statuses.sort()).toEqual(['BUILDING', 'QUEUED', 'QUEUED']);
    expect(t.cp.queue.size).toEqual({ running: 2, waiting: 2 });
  });
});
