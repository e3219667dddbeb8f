import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startRedisOnPort, type RedisProcess } from '../../support/redis-server.ts';
import { rulesDir } from '../helpers/gateway.ts';
import { netnsRefused, startNetnsHosts, type NetnsHost, type NetnsHosts } from '../helpers/netns-hosts.ts';
import { startPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres.ts';
import { spawnGateway, type SpawnedGateway } from '../helpers/spawn-gateway.ts';

/**
 * Issue 37, item 4: gateway replicas as separate hosts. Two `node bin/gateway.js start`, each in a network namespace
 * of its own (no shared loopback: what one process keeps to itself the other cannot reach), listening on their veth
 * addresses, sharing one private Redis and one private PostgreSQL bound on the bridge (named in each host's
 * /etc/hosts, as a cluster's DNS would name them). What one replica writes the
 * other reads: API keys, deployments' records, rate-limit buckets; and with one replica SIGKILLed the other keeps
 * answering with every record. Serving a deployment across replicas comes with the Kubernetes host: `replica()` starts
 * a third the same way.
 */
const refused = netnsRefused();

const ADMIN_TOKEN = randomBytes(16).toString('hex');
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

let net: NetnsHosts;
let redis: RedisProcess;
let postgres: PrivatePostgres;
let rules: ReturnType<typeof rulesDir>;
let env: Record<string, string>;
const dirs: string[] = [];
const replicas: SpawnedGateway[] = [];

/** A gateway replica inside `host`, on the shared stores, with a builds folder of its own. */
async function replica(host: NetnsHost): Promise<SpawnedGateway> {
  const builds = mkdtempSync(join(tmpdir(), 'replica-builds-'));
  dirs.push(builds);
  const gateway = await spawnGateway({ ...env, BUILD_WORK_DIR: builds }, 90_000, {
    prefix: host.exec,
    host: host.address,
  });
  return gateway;
}

beforeAll(async () => {
  if (refused) return;
  net = startNetnsHosts(2);
  const bridge = net.bridgeAddress;
  // Loopback for this process's readiness check, the bridge for the replicas.
  redis = await startRedisOnPort(await freePort(), 5000, {
    args: ['--bind', '127.0.0.1', bridge, '--protected-mode', 'no'],
  });
  postgres = await startPrivatePostgres({ alsoOn: { address: bridge, clients: net.subnet } });
  const admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  await admin.query('CREATE DATABASE agent_server');
  await admin.end();
  // The stores by name, as a cluster's DNS would give them: each host's /etc/hosts.
  for (const h of net.hosts) h.writeHosts({ 'redis.internal': bridge, 'postgres.internal': bridge });
  const onBridge = (url: string) => url.replace('@127.0.0.1:', '@postgres.internal:');
  rules = rulesDir(RULES);
  const shared = `replicas-${randomBytes(4).toString('hex')}`;
  env = {
    NODE_ENV: 'production',
    LOG_FORMAT: 'json',
    HOST: '0.0.0.0',
    PORT: '8080',
    ADMIN_HOST: '0.0.0.0',
    ADMIN_PORT: '9090',
    ADMIN_TOKEN,
    IDENTITY_SECRET: randomBytes(24).toString('hex'),
    SECRETS_KEY: randomBytes(32).toString('base64'),
    REDIS_URL: `redis://redis.internal:${redis.port}`,
    DATABASE_URI: onBridge(postgres.urlAs(postgres.superuser, postgres.password, 'agent_server')),
    DEPLOYMENTS_DATABASE_URI: onBridge(postgres.url),
    RULES_DIR: rules.dir,
    LOCAL_REPOS: 'allow',
    // No SANDBOX_NETWORK in a test's namespace: every organisation's deployments may run (none is served here).
    TRUST_ALL_TENANTS: '1',
    EXPECTED_INSTANCES: '2',
    // The same prefixes on both: by default each test gateway gets prefixes of its own (run-prefixes.ts).
    KEY_PREFIX: `${shared}-rl`,
    ROUTES_PREFIX: `${shared}-routes`,
    CONTROL_PLANE_PREFIX: `${shared}-cp`,
    API_KEYS_PREFIX: `${shared}-keys`,
    AGENT_STORE_PREFIX: `${shared}-agent`,
    DEPLOYMENT_DATA_PREFIX: `${shared}-deployment`,
  };
  replicas.push(...(await Promise.all(net.hosts.map((h) => replica(h)))));
}, 180_000);

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop()));
  await redis?.stop();
  await postgres?.stop();
  rules?.remove();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  net?.remove();
}, 60_000);

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
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
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

describe.skipIf(refused !== null)(
  'gateway replicas on separate hosts (network namespaces), one Redis, one PostgreSQL',
  () => {
    const [a, b] = [() => replicas[0]!, () => replicas[1]!];
    let key: { key: string; id: string; workspace: string };
    const created: string[] = [];
    let thread: string;

    it('each replica listens on its own host’s address, not on the other’s loopback', async () => {
      expect(new URL(a().url).hostname).toBe(net.hosts[0]!.address);
      expect(new URL(b().url).hostname).toBe(net.hosts[1]!.address);
      for (const r of [a(), b()]) expect((await call(r.adminUrl, '/readyz')).status).toBe(200);
    });

    it('a key made through one replica works on the other, and one revoked through the other stops working on both', async () => {
      key = await makeKey(a(), 'acme');
      expect(await listIds(b(), key)).toEqual([]);
      const other = await makeKey(b(), 'globex');
      expect((await call(a().url, '/v2/deployments', { headers: as(other) })).status).toBe(200);
      const revoked = await call(b().adminUrl, `/keys/${other.id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      expect(revoked.status).toBe(200);
      for (const r of [a(), b()])
        expect((await call(r.url, '/v2/deployments', { headers: as(other) })).status).toBe(401);
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
  },
);
