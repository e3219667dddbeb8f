import type { Redis } from 'ioredis';
import type { Hono } from 'hono';
import type { Logger } from 'pino';
import { ensureDevelopmentKey, type DevelopmentKey } from '../../keys/bootstrap.ts';
import { MemoryKeyRegistry } from '../../keys/memory-registry.ts';
import { RedisKeyRegistry } from '../../keys/redis-registry.ts';
import type { KeyRegistry } from '../../keys/types.ts';
import { closeRedis, createRedisClient, SERVICE_REDIS } from '../../redis-client.ts';
import { controlPlaneApp } from './api/app.ts';
import type { ControlPlaneEnv } from './api/auth.ts';
import { BuildQueue } from './builds/build-queue.ts';
import { GitBuilder, type Builder } from './builds/builder.ts';
import { Builds } from './builds/builds.ts';
import { buildSandbox } from './builds/build-sandbox.ts';
import { BuildLimits } from './builds/step-bounds.ts';
import { CgroupParent } from '../revision-host/local/sandbox/cgroup.ts';
import { MemoryControlPlaneStore } from './store/memory-store.ts';
import { RedisControlPlaneStore } from './store/redis-store.ts';
import { ANY_REPO_HOST, repoHostPolicy } from './builds/repo-hosts.ts';
import type { SecretBox } from './store/secrets.ts';
import { chooseSecretBox } from './store/secret-box-choice.ts';
import { DeploymentService } from './service.ts';
import type { ControlPlaneSettings } from './settings.ts';
import type { ControlPlaneStore } from './store.ts';
import { join } from 'node:path';
import { ArtifactStore } from './builds/artifacts.ts';
import { internalApp } from './api/internal-routes.ts';
import type { DeploymentAddressing } from '../../routing/deployment-url.ts';
import { routeTableFromSettings } from '../../routing/from-settings.ts';
import { MemoryRouteTable } from '../../routing/memory-route-table.ts';
import type { RouteTable } from '../../routing/route-table.ts';
import { probeNetwork } from '../revision-host/local/sandbox/network.ts';
import { revisionHostFromSettings } from './serving/revision-host-from-settings.ts';
import type { RevisionHost } from '../revision-host/revision-host.ts';
import { PushPoller } from './builds/push-poller.ts';
import { Hosting } from './leases/hosting.ts';
import { RuntimeLogs, type DeploymentLogs } from './serving/runtime-logs.ts';
import { SharedRuntimeLogs } from './serving/shared-runtime-logs.ts';
import { Serving } from './serving/serving.ts';
import { deploymentDataAccess } from './serving/deployment-data-access.ts';

/**
 * The bundled control plane, assembled from its settings: store (Redis when
 * REDIS_URL is set, else memory), key registry (shared with the edge when
 * given), secret box, builder and build queue, the service and its Hono app.
 * Revisions left unfinished by a previous process are recovered first.
 */
export interface ControlPlane {
  readonly app: Hono<ControlPlaneEnv>;
  /** The endpoints a revision's pod uses (api/internal-routes.ts): for the internal listener only, never the edge. */
  readonly internal: Hono;
  readonly service: DeploymentService;
  readonly store: ControlPlaneStore;
  readonly keys: KeyRegistry;
  readonly builds: Builds;
  readonly queue: BuildQueue;
  /** Where each deployment is served (the edge reads it). */
  readonly routes: RouteTable;
  /** Each deployment's own output: in Redis when the control plane has it (every gateway reads it), else in memory. */
  readonly logs: DeploymentLogs;
  /** Runs the revisions; null when the control plane keeps records only (`host: null`). */
  readonly serving: Serving | null;
  /** Settles once the deployments served before a restart are served again (or shown as not). */
  readonly resumed: Promise<void>;
  /** The development key made at this start (print it once, never log it), or null. */
  readonly devKey: DevelopmentKey | null;
  /**
   * Stops builds (a running one stays unfinished in the store and is INTERRUPTED at the next start), then the store.
   */
  close(): Promise<void>;
}

export interface ControlPlaneOptions {
  /** The edge's registry, to share one; else one is made from the settings (and closed with the control plane). */
  readonly keys?: KeyRegistry;
  /** A Redis client to use instead of connecting to REDIS_URL (not closed by the control plane). */
  readonly redis?: Redis;
  readonly builder?: Builder;
  readonly now?: () => Date;
  /** The routing table the edge reads; default from the settings (in Redis with REDIS_URL, else in this process). */
  readonly routes?: RouteTable;
  /**
   * Where the edge serves deployments (read when a `url` is shown: PUBLIC_URL may be known only once the edge
   * listens). Default: PUBLIC_URL / DEPLOYMENTS_DOMAIN of the settings, else `http://localhost:<PORT or 8080>`.
   */
  readonly addressing?: () => DeploymentAddressing;
  /**
   * Runs each DEPLOYED revision's Agent Server. Default: a process per revision on this host (LocalProcessHost).
   * null = records only: no install, no load check, nothing serves, `url` stays null (tests of the bookkeeping).
   */
  readonly host?: RevisionHost | null;
}

export async function createControlPlane(
  settings: ControlPlaneSettings,
  log: Logger,
  options: ControlPlaneOptions = {},
): Promise<ControlPlane> {
  const cpLog = log.child({ component: 'control-plane' });
  const now = options.now ?? (() => new Date());
  let ownRedis: Redis | null = null;
  const redis =
    options.redis ??
    (settings.redisUrl !== null
      ? (ownRedis = createRedisClient(settings.redisUrl, {
          ...SERVICE_REDIS,
          onError: (err) => cpLog.warn({ err: err.message }, 'control plane redis error'),
        }))
      : null);

  const store: ControlPlaneStore = redis
    ? new RedisControlPlaneStore(redis, settings.region, { prefix: settings.storePrefix })
    : new MemoryControlPlaneStore(settings.region);
  if (!options.keys && settings.keysPrefixWarning !== null) cpLog.warn(settings.keysPrefixWarning);
  const keys =
    options.keys ?? (redis ? new RedisKeyRegistry(redis, { prefix: settings.keysPrefix }) : new MemoryKeyRegistry());

  let box: SecretBox;
  try {
    box = await chooseSecretBox(settings.secretsKey, store, cpLog);
  } catch (err) {
    if (ownRedis) await closeRedis(ownRedis);
    throw err;
  }

  const repoHosts = settings.repoHostsChecked ? repoHostPolicy(settings.repoHostsAllowed) : ANY_REPO_HOST;
  const queue = new BuildQueue(
    settings.buildConcurrency,
    (err, id) => cpLog.error({ err, revisionId: id }, 'build job failed'),
    { perTenant: settings.buildConcurrencyPerTenant },
  );
  // Alone with REDIS_URL, the control plane writes the table the edges read; else one of this process.
  const ownRoutes = options.routes
    ? null
    : options.host === null
      ? new MemoryRouteTable()
      : routeTableFromSettings(
          { redisUrl: settings.redisUrl, routesPrefix: settings.routesPrefix, region: settings.region },
          cpLog.child({ component: 'deployment-routes' }),
        ).table;
  const routes = options.routes ?? ownRoutes!;
  // Probed once per process: a namespace made the way revisions and build steps get theirs.
  const network = await probeNetwork(settings.sandboxNetwork, settings.sandboxNetworkAllow);
  const sandbox = buildSandbox(settings, keys, network, settings.sandboxNetworkAllow);
  // One cgroup folder for revisions and build steps: an organisation's group holds both (its CPU share, ORG_CPUS).
  const cgroups = CgroupParent.open(`gateway-${process.pid}`);
  const limits = new BuildLimits({ ...settings.buildStep, orgCpus: settings.orgCpus }, cgroups);
  cpLog.info({ limits: limits.kind, ...settings.buildStep, orgCpus: settings.orgCpus }, 'build steps bounded');
  const builder =
    options.builder ??
    new GitBuilder({
      limits,
      sandbox: sandbox.mode,
      network: sandbox.network,
      gitTimeoutMs: settings.gitTimeoutMs,
      localRepos: settings.localRepos,
      repoHosts,
      maxCheckoutBytes: settings.checkoutMaxBytes,
    });
  // Revisions never get REDIS_URL's credentials, nor the operator's PostgreSQL role: each its own.
  const { redisUsers, databases } = await deploymentDataAccess(settings, {
    redis,
    box,
    runsRevisions: options.host === undefined,
    log: cpLog,
  });
  // Each deployment's output: in Redis, readable through every gateway on the store; else in this process.
  const runtimeLogs: DeploymentLogs = redis
    ? new SharedRuntimeLogs({
        redis,
        prefix: `${settings.storePrefix}:${store.region}`,
        log: cpLog.child({ component: 'runtime-logs' }),
      })
    : new RuntimeLogs();
  const host =
    options.host === undefined
      ? revisionHostFromSettings(settings, {
          ...{ log, keys, redis, redisUsers, databases, network, cgroups, runtimeLogs },
          tokenKey: box.derive('revision-tokens'),
        })
      : options.host;
  const folderOf = (deploymentId: string, revisionId: string) =>
    join(settings.workDir, store.region, deploymentId, revisionId);
  // Every served build is packed (what a host off this machine runs): see docs/control-plane.md for its cost.
  const artifacts =
    host === null
      ? null
      : new ArtifactStore(settings.artifactsDir, settings.checkoutMaxBytes + settings.nodeModulesMaxBytes);
  const serving =
    host === null
      ? null
      : new Serving({
          host,
          routes,
          store,
          keys,
          box,
          log: cpLog,
          folderOf,
          artifacts,
          memoryMb: settings.deploymentMemoryMb,
          maxMemoryMb: settings.maxMemoryMb,
          drainMs: settings.drainMs,
          dataPrefix: settings.deploymentDataPrefix,
          redis,
          redisUsers,
        });
  // With the local host, one gateway on the store hosts at a time (leases/hosting.ts); in memory, this one always.
  let hosting: Hosting | null = null;
  const builds = new Builds({
    runsHere: () => hosting?.held ?? true,
    store,
    serving,
    installTimeoutMs: settings.installTimeoutMs,
    nodeModulesMaxBytes: settings.nodeModulesMaxBytes,
    sandbox,
    limits,
    orgOf: (workspace) => keys.workspaceOrg(workspace),
    keepBuilds: serving ? settings.keepBuilds : 1,
    builder,
    artifacts,
    queue,
    stepDelayMs: settings.buildDelayMs,
    workDir: settings.workDir,
    now,
    log: cpLog,
    box,
  });
  const service = new DeploymentService({
    store,
    builds,
    box,
    now,
    log: cpLog,
    deploymentUrl: settings.deploymentUrl,
    addressing: serving
      ? (options.addressing ??
        (() => ({
          publicUrl: settings.publicUrl ?? `http://localhost:${settings.edgePort}`,
          domain: settings.deploymentsDomain,
        })))
      : null,
    repoHosts,
    maxDeploymentsPerTenant: settings.maxDeploymentsPerTenant,
    maxMemoryMb: settings.maxMemoryMb,
    logs: runtimeLogs,
    databases,
    // Refused at create, not accepted and failed at build: the tenant cannot change the operator's host or Redis.
    servingRefusal: async (workspace: string) => {
      const org = await keys.workspaceOrg(workspace);
      return host?.refusalFor?.(org) ?? (await redisUsers?.refusalFor(org)) ?? null;
    },
  });
  const poller = new PushPoller({ store, builder, builds, service, intervalMs: settings.pushPollMs, log: cpLog });

  hosting = new Hosting({
    redis: options.host === undefined ? redis : null,
    key: `${settings.storePrefix}:${store.region}:lease:hosting`,
    ttlMs: settings.hostingLeaseMs,
    store,
    builds,
    queue,
    serving,
    poller,
    log: cpLog,
  });
  await hosting.started();
  const resumed = hosting.resumed;
  const devKey = settings.development ? await ensureDevelopmentKey(keys) : null;
  if (devKey)
    cpLog.warn(
      { org: devKey.org, workspace: devKey.workspace },
      'empty key registry: created a development API key (printed once on stdout)',
    );
  // A registry in this process's memory gets keys only through the admin listener (ADMIN_TOKEN, `gateway keys`).
  if (!settings.development && keys.kind === 'memory') {
    cpLog.warn(
      'the key registry is in memory and NODE_ENV=production makes no development key: until one is made with `gateway keys create` (ADMIN_TOKEN set), or REDIS_URL is used, every X-Api-Key is refused (401)',
    );
  }

  cpLog.info(
    { region: settings.region, store: store.kind, keys: keys.kind, buildConcurrency: settings.buildConcurrency },
    'control plane ready',
  );
  return {
    app: controlPlaneApp({ service, keys, log: cpLog, maxJsonDepth: settings.maxJsonDepth, logs: runtimeLogs }),
    internal: internalApp({ store, keys, artifacts, tokenKey: box.derive('revision-tokens'), log: cpLog }),
    service,
    store,
    keys,
    builds,
    queue,
    routes,
    logs: runtimeLogs,
    serving,
    resumed,
    devKey,
    async close() {
      await poller.close();
      await queue.close();
      await hosting.stopWaiting();
      await serving?.close();
      // Only now, with its routes marked starting: another gateway on the store may host them.
      await hosting.release();
      cgroups?.close();
      // In memory, the deployments end with this process: their build folders would serve nothing ever again.
      if (store.kind === 'memory') await builds.removeAllFiles();
      redisUsers?.close();
      await databases?.close();
      await ownRoutes?.close();
      await store.close();
      if (!options.keys) await keys.close();
      if (ownRedis) await closeRedis(ownRedis);
    },
  };
}
