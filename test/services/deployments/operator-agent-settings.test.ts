import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  client,
  deploymentBody,
  eventually,
  makeRepo,
  startControlPlane,
  type TestControlPlane,
  type TestRepo,
  type Tenant,
} from '../control-plane/helpers.ts';
import { deployed, graphSource, target } from './helpers.ts';
import { httpUrl } from '../../helpers/target-url.ts';

/**
 * A deployment's own Agent Server runs with the operator's TTL_SWEEP_SECONDS and WEBHOOK_HOSTS_ALLOWED (before, it
 * got neither: expired threads waited a minute, and no webhook could reach an allowed private host). The deployment
 * cannot change them: its secrets and its langgraph.json `env` setting the same variables are the tenant's, and a
 * tenant widening where its webhooks may reach would reach the operator's network.
 */
interface Receiver {
  readonly url: string;
  readonly calls: { run_id: string; status: string }[];
  readonly server: Server;
}

async function receiver(): Promise<Receiver> {
  const calls: Receiver['calls'] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      calls.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Receiver['calls'][number]);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, calls, server };
}

let t: TestControlPlane;
let tenant: Tenant;
let repo: TestRepo;
let allowed: Receiver;
let other: Receiver;

beforeAll(async () => {
  [allowed, other] = await Promise.all([receiver(), receiver()]);
  // The tenant's app asks, in its langgraph.json `env`, for every loopback host and a sweep once a day.
  const hostileEnv = { WEBHOOK_HOSTS_ALLOWED: '127.0.0.1,localhost,0.0.0.0/0', TTL_SWEEP_SECONDS: '86400' };
  repo = makeRepo({
    'langgraph.json': JSON.stringify({ graphs: { echo: './graph.ts:graph' }, env: hostileEnv }),
    'graph.ts': graphSource('v1'),
  });
  t = await startControlPlane(
    {
      TRUST_ALL_TENANTS: '1',
      // The receivers listen on this host's loopback, which a revision in a network namespace of its own cannot reach
      // (docs/security.md): the handoff of the operator's settings is what is tested here.
      SANDBOX_NETWORK: 'host',
      TTL_SWEEP_SECONDS: '0.5',
      WEBHOOK_HOSTS_ALLOWED: new URL(allowed.url).host, // 127.0.0.1:<port of the allowed receiver> only
    },
    { host: undefined },
  );
  tenant = await t.tenant();
});

afterAll(async () => {
  await t?.close();
  repo?.remove();
  for (const r of [allowed, other]) r?.server.close();
});

describe("a deployment's Agent Server runs with the operator's settings", { timeout: 120_000 }, () => {
  let sdk: Client;
  beforeAll(async () => {
    const api = client(t.url, tenant);
    // The same variables as secrets too: the deployment's strongest say over its own environment.
    const secrets = [
      { name: 'WEBHOOK_HOSTS_ALLOWED', value: '127.0.0.1,localhost,0.0.0.0/0' },
      { name: 'TTL_SWEEP_SECONDS', value: '86400' },
    ];
    const d = (await api.post('/deployments', deploymentBody(repo.url, { secrets }))).json;
    await deployed(api, d.id, d.latest_revision_id);
    sdk = new Client({ apiUrl: await httpUrl(target(t, d.id)), apiKey: tenant.key });
  });

  it("calls a webhook on a host the operator allowed, and refuses another loopback port the deployment's env names", async () => {
    const run = await sdk.runs.create(null, 'echo', { input: { text: 'hook me' }, webhook: allowed.url });
    const call = await eventually(async () => allowed.calls.find((c) => c.run_id === run.run_id), 15_000);
    expect(call.status).toBe('success');

    await expect(sdk.runs.create(null, 'echo', { input: { text: 'no' }, webhook: other.url })).rejects.toMatchObject({
      status: 422,
      message: expect.stringContaining('webhook'),
    });
    expect(other.calls).toEqual([]);
  });

  it("sweeps an expired thread within the operator's TTL_SWEEP_SECONDS, not the deployment's", async () => {
    const thread = await sdk.threads.create({ ttl: { strategy: 'delete', ttl: 0.01 } }); // 0.6 s
    const started = Date.now();
    await eventually(
      () =>
        sdk.threads.get(thread.thread_id).then(
          () => undefined,
          (err: { status?: number }) => (err.status === 404 ? true : undefined),
        ),
      10_000,
    );
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
