import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { metricValue, scrapeMetrics } from '../helpers/scrape-metrics.ts';
import {
  client,
  deploymentBody,
  eventually,
  makeRepo,
  startControlPlane,
  waitForRevision,
  type TestControlPlane,
  type TestRepo,
} from '../services/control-plane/helpers.ts';

/**
 * The build metrics the dashboard and the alerts read move with real builds (a temporary git repository, through the
 * edge): a build that deploys and one that fails are counted by status and outcome on the admin /metrics.
 */
let repo: TestRepo;
let cp: TestControlPlane;
let gateway: TestGateway;

beforeAll(async () => {
  repo = makeRepo();
  repo.branches({ broken: { 'src/agent.ts': null } });
  cp = await startControlPlane();
  gateway = await startTestGateway({ CONTROL_PLANE_URL: cp.url });
});

afterAll(async () => {
  await gateway?.close();
  await cp?.close();
  repo?.remove();
});

it('a deployed build and a failed one are counted by status and outcome, with their durations', async () => {
  const scrape = async () => {
    const text = await scrapeMetrics(gateway.gateway.admin.port);
    return {
      deployed: metricValue(text, 'gateway_revisions_total', { status: 'DEPLOYED' }),
      failed: metricValue(text, 'gateway_revisions_total', { status: 'BUILD_FAILED' }),
      succeededBuilds: metricValue(text, 'gateway_build_duration_seconds_count', { outcome: 'succeeded' }),
      failedBuilds: metricValue(text, 'gateway_build_duration_seconds_count', { outcome: 'failed' }),
    };
  };
  const before = await scrape();
  const api = client(gateway.url, await cp.tenant(), '/api-host/v2');
  const good = (await api.post('/deployments', deploymentBody(repo.url))).json;
  const bad = (
    await api.post(
      '/deployments',
      deploymentBody(repo.url, {
        source_revision_config: { repo_ref: 'broken', langgraph_config_path: 'langgraph.json', image_uri: null },
      }),
    )
  ).json;
  expect((await waitForRevision(api, good.id, good.latest_revision_id)).status).toBe('DEPLOYED');
  expect((await waitForRevision(api, bad.id, bad.latest_revision_id)).status).toBe('BUILD_FAILED');
  const expected = {
    deployed: before.deployed + 1,
    failed: before.failed + 1,
    succeededBuilds: before.succeededBuilds + 1,
    failedBuilds: before.failedBuilds + 1,
  };
  // DEPLOYED is counted once the run has finished (its old build folders pruned), a moment after the store says so.
  let last = before;
  await eventually(async () => JSON.stringify((last = await scrape())) === JSON.stringify(expected), 5000).catch(
    () => undefined,
  );
  expect(last).toEqual(expected);
});
