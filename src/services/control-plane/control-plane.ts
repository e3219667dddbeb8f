import type { DeploymentAddressing } from '../../deployment-routes/deployment-url.ts';
import type { RouteTable } from '../../deployment-routes/route-table.ts';
import type { Redis } from 'ioredis';
import type { Hono } from 'hono';
import type { Logger } from 'pino';
import { ensureDevelopmentKey, type DevelopmentKey } from '../../keys/bootstrap.ts';
import { MemoryKeyRegistry } from '../../keys/memory-registry.ts';
import { RedisKeyRegistry } from '../../keys/redis-registry.ts';
import type { KeyRegistry } from '../../keys/types.ts';
import { closeRedis, createRedisClient, SERVICE_REDIS } from '../../redis-client.ts';
import { controlPlaneApp } from './app.ts';
import type { ControlPlaneEnv } from './auth.ts';
import { BuildQueue } from './build-queue.ts';
import { GitBuilder, type Builder } from './builder.ts';
import { Builds } from './builds.ts';
import { MemoryControlPlaneStore } from './memory-store.ts';
import { RedisControlPlaneStore } from './redis-store.ts';
import { ANY_REPO_HOST, repoHostPolicy } from './repo-hosts.ts';
import { SecretBox } from './secrets.ts';
import { DeploymentService } from './service.ts';
import type { ControlPlaneSettings } from './settings.ts';
import type { ControlPlaneStore } from './store.ts';

/**
 * The bundled control plane, assembled from its settings: store (Redis when
 * REDIS_URL is set, else memory), key registry (shared with the edge when
 * given), secret box, builder and build queue, the service and its Hono app.
 * Revisions left unfinished by a previous process are recovered first.
 */
export interface ControlPlane {
  readonly app: Hono<ControlPlaneEnv>;
  readonly service: DeploymentService;
  readonly store: ControlPlaneStore;
  readonly keys: KeyRegistry;
  readonly builds: Builds;
  readonly queue: BuildQueue;
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
  /** The deployment route table the edge reads (accepted here; written by the deployment runner). */
  readonly routes?: RouteTable;
  /** The base of a deployment's `url` (the edge's PUBLIC_URL and DEPLOYMENTS_DOMAIN). */
  readonly addressing?: () => DeploymentAddressing;
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
  if (settings.secretsKey !== null) box = new SecretBox(settings.secretsKey);
  else {
    box = SecretBox.ephemeral();
    cpLog.warn(
      { store: store.kind },
      'SECRETS_KEY is unset: deployment secrets are encrypted with a key generated for this process' +
        (store.kind === 'redis' ? ' and become unreadable after a restart' : '') +
        '; set SECRETS_KEY (base64 of 32 random bytes) in production',
    );
  }

  const repoHosts = settings.repoHostsChecked ? repoHostPolicy(settings.repoHostsAllowed) : ANY_REPO_HOST;
  const queue = new BuildQueue(settings.buildConcurrency, (err, id) =>
    cpLog.error({ err, revisionId: id }, 'build job failed'),
  );
  const builds = new Builds({
    store,
    builder:
      options.builder ??
      new GitBuilder({ gitTimeoutMs: settings.gitTimeoutMs, localRepos: settings.localRepos, repoHosts }),
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
    repoHosts,
  });

  const recovered = await builds.recover();
  if (recovered.requeued + recovered.interrupted > 0) cpLog.info(recovered, 'recovered unfinished revisions');
  const devKey = settings.development ? await ensureDevelopmentKey(keys) : null;
  if (devKey)
    cpLog.warn(
      { org: devKey.org, workspace: devKey.workspace },
      'empty key registry: created a development API key (printed once on stdout)',
    );
  // `gateway keys create` writes to Redis: a registry in this process's memory can never hold a key in production.
  if (!settings.development && keys.kind === 'memory') {
    cpLog.warn(
      'the key registry is in memory and NODE_ENV=production makes no development key: no API key exists, so every X-Api-Key is refused (401); set REDIS_URL and create keys with `gateway keys create`',
    );
  }

  cpLog.info(
    { region: settings.region, store: store.kind, keys: keys.kind, buildConcurrency: settings.buildConcurrency },
    'control plane ready',
  );
  return {
    app: controlPlaneApp({ service, keys, log: cpLog, maxJsonDepth: settings.maxJsonDepth }),
    service,
    store,
    keys,
    builds,
    queue,
    devKey,
    async close() {
      await queue.close();
      await store.close();
      if (!options.keys) await keys.close();
      if (ownRedis) await closeRedis(ownRedis);
    },
  };
}
