import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, startRedisOnPort, type RedisProcess } from '../../support/redis-server.ts';
import { rulesDir } from './gateway.ts';
import { startNetnsHosts, type NetnsHost, type NetnsHosts } from './netns-hosts.ts';
import { startPrivatePostgres, type PrivatePostgres } from './private-postgres.ts';
import { spawnGateway, type SpawnedGateway } from './spawn-gateway.ts';

/**
 * Gateway replicas as separate hosts, the way a cluster runs them: `count` network namespaces (netns-hosts.ts), a
 * private Redis and a private PostgreSQL bound on their bridge and named `redis.internal` / `postgres.internal` in
 * each host's /etc/hosts, and one `node bin/gateway.js start` per host on its veth address (edge 8080, admin 9090),
 * all with the same settings, secrets and Redis prefixes, each with a builds folder of its own. `start(host)` starts
 * one more on a host (a replacement after a kill, or with settings of its own); `stop()` removes everything, and runs
 * when the setup itself fails. Needs root: call `netnsRefused()` first.
 */
export interface ReplicaHosts {
  readonly net: NetnsHosts;
  readonly redis: RedisProcess;
  readonly postgres: PrivatePostgres;
  /** The settings every replica gets (BUILD_WORK_DIR aside). */
  readonly env: Readonly<Record<string, string>>;
  /** The replicas' ADMIN_TOKEN (for /keys, /metrics). */
  readonly adminToken: string;
  /** The replicas started at setup, in the order of `net.hosts`. */
  readonly replicas: readonly SpawnedGateway[];
  /** Starts a replica on `host` with `extra` settings over the shared ones. */
  start(host: NetnsHost, extra?: Record<string, string>): Promise<SpawnedGateway>;
  /** Stops every replica this started (SIGTERM, then SIGKILL), the stores, and removes the hosts. Idempotent. */
  stop(): Promise<void>;
}

export interface ReplicaHostsOptions {
  readonly count: number;
  /** The us.yaml of the replicas' RULES_DIR. */
  readonly rules: string;
  /** Settings over the defaults below. */
  readonly env?: Record<string, string>;
}

export async function startReplicaHosts(options: ReplicaHostsOptions): Promise<ReplicaHosts> {
  const net = startNetnsHosts(options.count);
  const started: SpawnedGateway[] = [];
  const dirs: string[] = [];
  let redis: RedisProcess | undefined;
  let postgres: PrivatePostgres | undefined;
  let rules: ReturnType<typeof rulesDir> | undefined;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await Promise.all(started.map((r) => r.stop()));
      await redis?.stop();
      await postgres?.stop();
      rules?.remove();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
      net.remove();
    })());
  try {
    const bridge = net.bridgeAddress;
    // Loopback too, for the readiness check of this process.
    redis = await startRedisOnPort(await freePort(), 5000, {
      args: ['--bind', '127.0.0.1', bridge, '--protected-mode', 'no'],
    });
    postgres = await startPrivatePostgres({ alsoOn: { address: bridge, clients: net.subnet } });
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    await admin.query('CREATE DATABASE agent_server');
    await admin.end();
    // The stores by name, as a cluster's DNS would give them.
    for (const h of net.hosts) h.writeHosts({ 'redis.internal': bridge, 'postgres.internal': bridge });
    const byName = (url: string) => url.replace('@127.0.0.1:', '@postgres.internal:');
    rules = rulesDir(options.rules);
    const adminToken = randomBytes(16).toString('hex');
    const shared = `replicas-${randomBytes(4).toString('hex')}`;
    const env: Record<string, string> = {
      NODE_ENV: 'production',
      LOG_FORMAT: 'json',
      HOST: '0.0.0.0',
      PORT: '8080',
      ADMIN_HOST: '0.0.0.0',
      ADMIN_PORT: '9090',
      ADMIN_TOKEN: adminToken,
      IDENTITY_SECRET: randomBytes(24).toString('hex'),
      SECRETS_KEY: randomBytes(32).toString('base64'),
      REDIS_URL: `redis://redis.internal:${redis.port}`,
      DATABASE_URI: byName(postgres.urlAs(postgres.superuser, postgres.password, 'agent_server')),
      DEPLOYMENTS_DATABASE_URI: byName(postgres.url),
      RULES_DIR: rules.dir,
      LOCAL_REPOS: 'allow',
      // No SANDBOX_NETWORK in a test's namespace: every organisation's deployments may run.
      TRUST_ALL_TENANTS: '1',
      EXPECTED_INSTANCES: String(options.count),
      // The same prefixes on every replica: by default each test gateway gets its own (run-prefixes.ts).
      KEY_PREFIX: `${shared}-rl`,
      ROUTES_PREFIX: `${shared}-routes`,
      CONTROL_PLANE_PREFIX: `${shared}-cp`,
      API_KEYS_PREFIX: `${shared}-keys`,
      AGENT_STORE_PREFIX: `${shared}-agent`,
      DEPLOYMENT_DATA_PREFIX: `${shared}-deployment`,
      ...options.env,
    };
    const start = async (host: NetnsHost, extra: Record<string, string> = {}) => {
      const builds = mkdtempSync(join(tmpdir(), 'replica-builds-'));
      dirs.push(builds);
      const gateway = await spawnGateway({ ...env, BUILD_WORK_DIR: builds, ...extra }, 90_000, {
        prefix: host.exec,
        host: host.address,
      });
      started.push(gateway);
      return gateway;
    };
    // Settled, not all: a replica still starting when another failed is stopped with the rest.
    const settled = await Promise.allSettled(net.hosts.map((h) => start(h)));
    const failed = settled.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    const replicas = settled.map((r) => (r as PromiseFulfilledResult<SpawnedGateway>).value);
    return { net, redis, postgres, env, adminToken, replicas, start, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
