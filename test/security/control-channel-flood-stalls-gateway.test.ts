import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FLOOD_REASON } from '../../src/services/revision-host/local/channel-budget.ts';
import { client, deploymentBody, makeRepo, type Tenant, type TestRepo } from '../services/control-plane/helpers.ts';
import { startDeploymentsGateway, type DeploymentsGateway } from '../services/deployments/deployments-gateway.ts';
import { ask, BARE_APP, deployed } from '../services/deployments/helpers.ts';
import { hostileApp } from './fixtures/two-tenants.ts';

/**
 * Finding "the control channel floods the gateway": app code wrote 500,000 lines of garbage on fd 3 in 2.8 s; each
 * was logged as a warning (115 MiB of gateway log, 3.4 CPU-s of the edge's event loop) and another tenant's request
 * through the edge stalled for 2.8 s. Now ignored messages are counted and logged at most once a second, the channel
 * is read at a bounded rate, and a process past its budget is closed, its revision restarted with the reason.
 */
const FLOOD = `
  const chunk = Buffer.from('{"type":"garbage"}\\n'.repeat(5000));
  const until = Date.now() + 20_000;
  for (let i = 0; i < 40 && Date.now() < until; ) {
    try {
      fs.writeSync(3, chunk);
      i++;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') break; // closed by the gateway
    }
  }
  return 'flooded';
`;

let setup: DeploymentsGateway;
let victimRepo: TestRepo;
let hostileRepo: TestRepo;
let victim: { id: string; tenant: Tenant };
let hostile: { id: string; tenant: Tenant };

beforeAll(async () => {
  victimRepo = makeRepo(BARE_APP);
  hostileRepo = makeRepo(hostileApp('', FLOOD));
  setup = await startDeploymentsGateway('channel-flood');
  const deploy = async (repo: TestRepo, tenant: Tenant, secrets: { name: string; value: string }[]) => {
    const api = client(setup.gw.url, tenant);
    const d = (await api.post('/deployments', deploymentBody(repo.url, { secrets }))).json;
    await deployed(api, d.id, d.latest_revision_id);
    return { id: d.id as string, tenant };
  };
  victim = await deploy(victimRepo, setup.tenant, [{ name: 'TOKEN', value: 'victim' }]);
  hostile = await deploy(hostileRepo, await setup.newTenant(), []);
}, 240_000);

afterAll(async () => {
  await setup?.close();
  victimRepo?.remove();
  hostileRepo?.remove();
});

const url = (id: string) => `${setup.gw.url}/deployments/${id}`;

describe('a deployed app floods its control channel (fd 3)', { timeout: 90_000 }, () => {
  it('the gateway log stays small, the process is closed with the reason, the other tenant is served', async () => {
    const logBefore = setup.gw.logs.raw().length;
    // The flood starts in a run of the hostile app; its process is closed under it, so this run fails.
    const flood = ask(url(hostile.id), hostile.tenant, 'flood').catch((err: Error) => err.message);

    const restarted = await setup.gw.logs.waitFor(
      (l) => l.msg === 'revision process stopped unexpectedly; restarting' && l.deploymentId === hostile.id,
      30_000,
    );
    expect(restarted.reason).toBe(FLOOD_REASON);
    expect(await ask(url(victim.id), victim.tenant, 'still here')).toBe('v1 hello victim: still here');
    await flood;

    const ignoredLines = setup.gw.logs
      .raw()
      .slice(logBefore)
      .split('\n')
      .filter((l) => l.includes('revision message'));
    expect(ignoredLines.length).toBeLessThan(50);
    expect(setup.gw.logs.raw().length - logBefore).toBeLessThan(1024 * 1024);
  });
});
