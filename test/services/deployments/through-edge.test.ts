import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestGateway } from '../../helpers/gateway.ts';
import { client, deploymentBody, makeRepo, type Tenant, type TestRepo } from '../control-plane/helpers.ts';
import { startDeploymentsGateway, type DeploymentsGateway } from './deployments-gateway.ts';
import { BARE_APP, deployed } from './helpers.ts';

/**
 * The whole path a user takes, through the real edge and the bundled control plane: create a deployment from a git
 * repository, poll it, read its `url`, call it with the unmodified SDK (rate limited like all traffic), read its
 * `/docs`, delete it (its url answers 404). The shared Redis is used under unique prefixes, removed afterwards.
 */

let setup: DeploymentsGateway;
let gw: TestGateway;
let repo: TestRepo;
let tenant: Tenant;

beforeAll(async () => {
  repo = makeRepo(BARE_APP);
  setup = await startDeploymentsGateway('deploy-edge');
  ({ gw, tenant } = setup);
});

afterAll(async () => {
  await setup?.close();
  repo?.remove();
});

describe('a deployment through the edge', () => {
  it('create, poll, the SDK at its url (rate limited), /docs, delete: 404 naming it', async () => {
    const api = client(gw.url, tenant);
    const d = (
      await api.post('/deployments', deploymentBody(repo.url, { secrets: [{ name: 'TOKEN', value: 'edge' }] }))
    ).json;
    await deployed(api, d.id, d.latest_revision_id);
    const url = (await api.get(`/deployments/${d.id}`)).json.url as string;
    expect(url).toMatch(new RegExp(`/deployments/${d.id}$`));

    const sdk = new Client({ apiUrl: url, apiKey: tenant.key });
    const events: { event: string; data: unknown }[] = [];
    for await (const e of sdk.runs.stream(null, 'echo', { input: { text: 'through the edge' }, streamMode: 'values' }))
      events.push(e);
    const last = events.filter((e) => e.event === 'values').at(-1)?.data as { answer: string };
    expect(last.answer).toBe('v1 hello edge: through the edge');

    const search = await fetch(`${url}/assistants/search`, {
      method: 'POST',
      headers: { 'x-api-key': tenant.key, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(search.status).toBe(200);
    expect(search.headers.get('ratelimit-policy')).not.toBeNull();
    await search.body?.cancel();
    const docs = await fetch(`${url}/docs`);
    expect(docs.status).toBe(200);
    await docs.body?.cancel();

    expect((await api.delete(`/deployments/${d.id}`)).status).toBe(204);
    const gone = await fetch(`${url}/ok`, { headers: { 'x-api-key': tenant.key } });
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as { detail: string }).detail).toContain(d.id);
  }, 120_000);
});
