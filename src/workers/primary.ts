import type { Logger } from 'pino';
import { adminApp } from '../admin/app.ts';
import { keySchemeFromSettings, storeFromSettings } from '../limiter/from-settings.ts';
import { LiveOverrides, overrideStoreFromSettings } from '../limiter/overrides.ts';
import { listen } from '../listen/listen.ts';
import { regionRuleFile } from '../rules/load.ts';
import { RuleSource } from '../rules/rule-source.ts';
import type { DeploymentAddressing } from '../routing/deployment-url.ts';
import { routeTableFromSettings } from '../routing/from-settings.ts';
import { BundledServices, type BundledService } from '../services/bundled.ts';
import type { Settings } from '../settings/settings.ts';
import { SettingsError } from '../settings/env.ts';
import { WorkerPool, WorkerStartError } from './pool.ts';

/** Beyond DRAIN_SECONDS, how long the primary waits for draining workers before it kills them. */
const DRAIN_KILL_GRACE_MS = 5000;

/**
 * `gateway start` with WORKERS > 1: this process is the cluster's primary. It checks the settings once, starts the
 * bundled services once (never per worker), forks the edge workers with the services' loopback URLs as
 * CONTROL_PLANE_URL / AGENT_SERVER_URL, and serves the one admin listener: /metrics aggregated over the workers,
 * /readyz over them. SIGHUP reaches every worker; SIGTERM / SIGINT drain them all, then the services, and return 0;
 * a second signal kills the workers and exits 1. Returns the exit code.
 */
export async function runPrimary(settings: Settings, log: Logger) {
  const count = settings.workers;
  // Installed first: SIGHUP's default action ends a process; while the workers start, each reads the file anyway.
  let pool: WorkerPool | undefined;
  process.on('SIGHUP', () => (pool?.reload(), rules.reload()));
  if (settings.redisUrl === null)
    throw new SettingsError(
      'WORKERS',
      `${count} edge workers need REDIS_URL: with the in-memory store each worker would keep its own buckets and admit up to ${count} × every limit (set REDIS_URL, or WORKERS=1)`,
    );
  // Checked here once, so that an invalid rule file is one message, not one per worker. Kept: the policies an
  // operator's override may name (/limits/overrides).
  const rules = new RuleSource(regionRuleFile(settings.rulesDir, settings.region));
  // Plans per organisation: written here to Redis, which every worker polls.
  const overrides = new LiveOverrides(overrideStoreFromSettings(settings));
  // The workers' buckets, in Redis: the operator's /limits/buckets reads and resets them from here.
  const store = storeFromSettings(settings);
  const closeStores = () => Promise.all([overrides.close(), store.limiter.close()]);

  // The deployment route table the bundled control plane writes and every worker reads (in Redis: REDIS_URL is set).
  const routeTable = routeTableFromSettings(settings, log.child({ component: 'deployment-routes' }));
  const addressing = (): DeploymentAddressing => ({
    publicUrl: settings.publicUrl ?? `http://localhost:${pool?.address?.port ?? settings.port}`,
    domain: settings.deploymentsDomain,
  });
  const bundled = new BundledServices(settings.bundled, log);
  const owned: BundledService[] = [];
  const serviceUrl = async (url: string | null, start: () => Promise<BundledService>) => {
    if (url !== null) return url;
    const service = await start();
    owned.push(service);
    return service.url;
  };
  const closeServices = async () => {
    await Promise.all(owned.map((o) => o.close()));
    await Promise.all([bundled.close(), routeTable.table.close()]);
  };
  const workerEnv = {
    CONTROL_PLANE_URL: await serviceUrl(settings.controlPlaneUrl, () =>
      bundled.controlPlane({ routes: routeTable.table, addressing }),
    ),
    AGENT_SERVER_URL: await serviceUrl(settings.agentServerUrl, () => bundled.agentServer()),
    // Decided here, where the upstreams are known to be the bundled ones: with their URLs set, a worker's default
    // would be off.
    KEY_CHECK: settings.keyCheck ? 'on' : 'off',
  };

  pool = new WorkerPool(count, workerEnv, log);
  try {
    await pool.start();
  } catch (err) {
    pool.kill();
    await closeServices();
    await closeStores();
    if (!(err instanceof WorkerStartError)) throw err;
    log.error({ worker: err.slot, exitCode: err.exitCode }, err.message);
    log.flush();
    return err.exitCode || 1;
  }

  let draining = false;
  const adminLog = log.child({ component: 'admin' });
  const app = adminApp({
    metrics: pool.metrics,
    ready: () => pool.readiness(draining),
    token: settings.adminToken,
    keys: settings.controlPlaneUrl === null ? bundled.keys() : null,
    overrides: { matcher: () => rules.current(), overrides, log: adminLog },
    buckets: {
      matcher: () => rules.current(),
      store: store.limiter,
      scheme: keySchemeFromSettings(settings),
      ipv6PrefixBits: settings.ipv6PrefixBits,
      overrides,
      log: adminLog,
    },
  });
  const admin = await listen(app, settings.adminPort, settings.adminHost);
  const first = pool.readiness(false);
  log.info(
    {
      host: pool.address!.host,
      port: pool.address!.port,
      adminHost: settings.adminHost,
      adminPort: admin.port,
      region: settings.region,
      rules: regionRuleFile(settings.rulesDir, settings.region),
      version: first.rules,
      store: settings.redisClusterNodes.length > 0 ? 'redis-cluster' : 'redis',
      workers: count,
    },
    'gateway listening',
  );

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  const force = () => (pool.kill(), process.exit(1));
  process.once('SIGTERM', force);
  process.once('SIGINT', force);
  draining = true;
  log.info({ signal, drainSeconds: settings.drainMs / 1000, workers: count }, 'draining');
  await pool.drain(settings.drainMs + DRAIN_KILL_GRACE_MS);
  await closeServices();
  await admin.close(0);
  await closeStores();
  log.info('stopped');
  log.flush();
  return 0;
}
