import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { netnsRefused } from '../helpers/netns-hosts.ts';
import { startReplicaHosts, type ReplicaHosts } from '../helpers/replica-hosts.ts';
import type { SpawnedGateway } from '../helpers/spawn-gateway.ts';

/**
 * Issue 37, item 4: gateway replicas as separate hosts. Two `node bin/gateway.js start`, each in a network namespace
 * of its own (no shared loopback: what one process keeps to itself the other cannot reach), listening on their veth
 * addresses, sharing one private Redis and one private PostgreSQL bound on the bridge (named in each host's
 * /etc/hosts, as a cluster's DNS would name them). What one replica writes the
 * other reads: API keys, deployments' records, rate-limit buckets; and with one replica SIGKILLed the other keeps
 * answering with every record. The setup is test/helpers/replica-hosts.ts: serving a deployment across replicas, once
 * the Kubernetes host lands, starts from it.
 */
const refused = netnsRefused();

const LIMIT = 3; // requests to /limited per client address per minute, across the replicas
const RULES = `
- id: limited
  match: { prefix: /limited }
  limits:
    - { by: ip, count: ${LIMIT}, per: 60s, category: Test }
- id: open
  limits:
    - { by: ip, count: 1000000, per: 1s, category: Test }
`;

let setup: ReplicaHosts | undefined;

beforeAll(async () => {
  if (!refused) setup = await startReplicaHosts({ count: 2, rules: RULES });
}, 180_000);
afterAll(() => setup?.stop(), 60_000);

type Json = Record<string, any>;

async function call(
  base: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<{ status: number; body: Json }> {
  const res = await fetch(base + path, {
    method: init.method ?? 'GET',
    headers: { 'content-type': 'application/json', ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  let body: Json = {};
  try {
    body = JSON.parse(text) as Json;
  } catch {
    body = { text };
  }
  return { status: res.status, body };
}

/** A key made through `replica`'s admin listener, for organisation `org` and its workspace. */
async function makeKey(replica: SpawnedGateway, org: string): Promise<{ key: string; id: string; workspace: string }> {
  const workspace = `${org}-ws`;
  const made = await call(replica.adminUrl, '/keys', {
    method: 'POST',
    headers: { authorization: `Bearer ${setup!.adminToken}` },
    body: { org, workspace },
  });
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  return { key: made.body.key as string, id: made.body.id as string, workspace };
}

const as = (k: { key: string; workspace: string }) => ({ 'x-api-key': k.key, 'x-tenant-id': k.workspace });
/** A user of the bundled Agent Server's example app (examples/app/auth.ts), with the key. */
const asAlice = (k: { key: string; workspace: string }) => ({ ...as(k), authorization: 'Bearer alice-token' });

/** A deployment whose repository does not exist: its record is what these tests share (its build fails at once). */
const deploymentBody = (name: string) => ({
  name,
  source: 'github',
  source_config: { repo_url: join(tmpdir(), `no-such-repo-${randomBytes(4).toString('hex')}`), build_on_push: false },
  source_revision_config: { repo_ref: 'main', langgraph_config_path: 'langgraph.json' },
});

async function listIds(replica: SpawnedGateway, k: { key: string; workspace: string }): Promise<string[]> {
  const listed = await call(replica.url, '/v2/deployments?limit=100', { headers: as(k) });
  expect(listed.status, JSON.stringify(listed.body)).toBe(200);
  return (listed.body.resources as Json[]).map((d) => d.id as string).sort();
}

const title = 'gateway replicas on separate hosts (network namespaces), one Redis, one PostgreSQL';

// Without root the suite is skipped, its title saying why.
describe.skipIf(refused !== null)(refused ? `${title} (skipped: ${refused})` : title, () => {
  const [a, b] = [() => setup!.replicas[0]!, () => setup!.replicas[1]!];
  let key: { key: string; id: string; workspace: string };
  const created: string[] = [];
  let thread: string;

  it('each replica listens on its own host’s address, not on the other’s loopback', async () => {
    expect(new URL(a().url).hostname).toBe(setup!.net.hosts[0]!.address);
    expect(new URL(b().url).hostname).toBe(setup!.net.hosts[1]!.address);
    for (const r of [a(), b()]) expect((await call(r.adminUrl, '/readyz')).status).toBe(200);
  });

  it('a key made through one replica works on the other, and one revoked through the other stops working on both', async () => {
    key = await makeKey(a(), 'acme');
    expect(await listIds(b(), key)).toEqual([]);
    const other = await makeKey(b(), 'globex');
    expect((await call(a().url, '/v2/deployments', { headers: as(other) })).status).toBe(200);
    const revoked = await call(b().adminUrl, `/keys/${other.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${setup!.adminToken}` },
    });
    expect(revoked.status).toBe(200);
    for (const r of [a(), b()]) expect((await call(r.url, '/v2/deployments', { headers: as(other) })).status).toBe(401);
  });

  it('deployments created through either replica are listed and read through both', async () => {
    for (const [i, r] of [a(), b(), a(), b()].entries()) {
      const made = await call(r.url, '/v2/deployments', {
        method: 'POST',
        headers: as(key),
        body: deploymentBody(`d${i}`),
      });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      created.push(made.body.id as string);
    }
    created.sort();
    expect(await listIds(a(), key)).toEqual(created);
    expect(await listIds(b(), key)).toEqual(created);
    for (const id of created) {
      const read = (r: SpawnedGateway) => call(r.url, `/v2/deployments/${id}`, { headers: as(key) });
      const [onA, onB] = await Promise.all([read(a()), read(b())]);
      expect(onA.status).toBe(200);
      expect(onB.body.name).toBe(onA.body.name);
    }
  });

  it('a thread of the bundled Agent Server made through one replica is read through the other (PostgreSQL)', async () => {
    const made = await call(a().url, '/threads', {
      method: 'POST',
      headers: asAlice(key),
      body: { metadata: { on: 'a' } },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    thread = made.body.thread_id as string;
    const read = await call(b().url, `/threads/${thread}`, { headers: asAlice(key) });
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body.metadata).toMatchObject({ on: 'a' });
  });

  it('rate limits are shared: the limit reached through one replica applies through the other', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT; i++) statuses.push((await call(a().url, '/limited')).status);
    expect(statuses).not.toContain(429);
    expect((await call(b().url, '/limited')).status).toBe(429);
    expect((await call(a().url, '/limited')).status).toBe(429);
  });

  it('one replica SIGKILLed: the other keeps answering, with every record, key and deployment', async () => {
    const killed = a();
    process.kill(killed.pid, 'SIGKILL');
    expect(await killed.exited).toEqual({ code: null, signal: 'SIGKILL' });
    await expect(fetch(`${killed.adminUrl}/healthz`, { signal: AbortSignal.timeout(2000) })).rejects.toThrow();
    expect((await call(b().adminUrl, '/readyz')).status).toBe(200);
    expect(await listIds(b(), key)).toEqual(created);
    const made = await call(b().url, '/v2/deployments', {
      method: 'POST',
      headers: as(key),
      body: deploymentBody('after'),
    });
    expect(made.status).toBe(201);
    expect((await call(b().url, '/limited')).status).toBe(429);
  });
});
