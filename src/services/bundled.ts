import { relative } from 'node:path';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { DEFAULT_ORG, DEFAULT_WORKSPACE, developmentKeyBanner } from '../keys/bootstrap.ts';
import { MemoryKeyRegistry } from '../keys/memory-registry.ts';
import { RedisKeyRegistry } from '../keys/redis-registry.ts';
import type { KeyRegistry } from '../keys/types.ts';
import { listen } from '../listen/listen.ts';
import { closeRedis, createRedisClient, SERVICE_REDIS } from '../redis-client.ts';
import { SettingsError } from '../settings/env.ts';
import type { BundledSettings } from '../settings/settings.ts';
import { createAgentServer } from './agent-server/app.ts';
import { registryKeyVerifier } from './agent-server/auth/authenticate.ts';
import { openAgentStorage } from './agent-server/store/open-storage.ts';
import { registerDefaultDeployment } from './control-plane/serving/default-deployment.ts';
import { createControlPlane, type ControlPlane, type ControlPlaneOptions } from './control-plane/control-plane.ts';
import { listenInternal } from './control-plane/internal-listener.ts';
import { guarded, internalSecret, markInternal } from './internal-auth.ts';

export interface BundledService {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * The bundled services, in this process on loopback ports, for a gateway
 * started without CONTROL_PLANE_URL / AGENT_SERVER_URL. Their settings are
 * the gateway's (settings.ts: read once, at start). Both check API keys against one registry (in
 * Redis with REDIS_URL, else in memory); a development key made at first
 * start is printed once on stdout, never logged. Each answers only what the
 * edge forwards (internal-auth.ts): a deployment's process calling the
 * loopback port directly gets 403.
 */
export class BundledServices {
  private registry: KeyRegistry | null = null;
  private cp: ControlPlane | null = null;
  /** The default deployment's id once agentServer() has listed it: this process serves it itself. */
  defaultDeploymentId: string | null = null;
  private redis: Redis | null = null;
  private reachable: Promise<void> | undefined;
  private lastRedisError: string | undefined;

  constructor(
    private readonly settings: BundledSettings,
    private readonly log: Logger,
  ) {}

  /** `deployments`: the route table it writes and the base of the deployments' `url` (the gateway's). */
  async controlPlane(deployments: Pick<ControlPlaneOptions, 'routes' | 'addressing'> = {}): Promise<BundledService> {
    await this.redisReachable();
    const cp = await createControlPlane(this.need('controlPlane'), this.log, {
      keys: this.keys(),
      ...deployments,
    });
    this.cp = cp;
    const server = await listen(guarded(cp.app, internalSecret()), 0, '127.0.0.1');
    markInternal(server.url);
    // The endpoints of revision pods: their own listener (INTERNAL_PORT), which the edge never forwards to.
    const internal = await listenInternal(cp, this.need('controlPlane'), this.log);
    const banner = developmentKeyBanner(
      cp.devKey,
      { kind: cp.keys.kind, prefix: this.need('keys').prefix, admin: this.settings.keysAdmin },
      this.need('controlPlane').development,
    );
    if (banner !== null) process.stdout.write(banner + '\n');
    return { url: server.url, close: async () => (await server.close(), await internal?.close(), await cp.close()) };
  }

  /** The default deployment: the app of APP_CONFIG, else the example app (bearer-token auth, per-user threads). */
  async agentServer(): Promise<BundledService> {
    await this.redisReachable();
    const settings = this.need('agentServer');
    const verifyApiKey = registryKeyVerifier(this.keys());
    // With DATABASE_URI, threads, their state and the long-term memory live in PostgreSQL; else, with REDIS_URL, in
    // Redis, on the key registry's connection; else in memory.
    const log = this.log.child({ component: 'agent-server' });
    const storage = await openAgentStorage({
      database: settings.database,
      redis: () => this.redisClient(),
      redisPrefix: settings.storePrefix,
      log,
    });
    const server = await createAgentServer({
      configPath: settings.appConfig,
      verifyApiKey,
      org: DEFAULT_ORG,
      heartbeatMs: settings.heartbeatMs,
      ttlSweepMs: settings.ttlSweepMs,
      maxJsonDepth: settings.maxJsonDepth,
      quotas: settings.quotas,
      webhooks: { allowed: settings.webhookHostsAllowed },
      store: storage.store,
      checkpointer: storage.checkpointer,
      items: storage.items,
      relay: storage.relay,
      log,
    }).catch(async (err: unknown) => {
      await storage.close();
      throw err;
    });
    const app = guarded(server.app, internalSecret());
    const listening = await listen(app, 0, '127.0.0.1');
    server.sockets.attach(listening.server, app); // the handshake passes the guard too
    markInternal(listening.url);
    // Listed by the bundled control plane, with a `url` and a route to this server (default-deployment.ts).
    const listed =
      this.cp &&
      (await registerDefaultDeployment(
        { store: this.cp.store, routes: this.cp.routes, now: () => new Date(), log: this.log },
        {
          tenantId: DEFAULT_WORKSPACE,
          target: listening.url,
          configPath: relative(process.cwd(), settings.appConfig) || settings.appConfig,
          graphs: server.graphs,
        },
      ));
    this.log.info(
      { app: settings.appConfig, graphs: server.graphs, url: listening.url, deploymentId: listed?.id },
      'default deployment serving',
    );
    this.defaultDeploymentId = listed?.id ?? null;
    const routes = this.cp?.routes;
    return {
      url: listening.url,
      close: async () => {
        // Its route goes with this server, unless another gateway on the same table serves it now.
        if (listed && routes?.get(listed.id)?.target === listening.url) await routes.delete(listed.id).catch(() => {});
        await server.close();
        await listening.close();
      },
    };
  }

  async close(): Promise<void> {
    await this.registry?.close();
    if (this.redis) await closeRedis(this.redis);
  }

  /**
   * The key registry the bundled services check keys against (in Redis with REDIS_URL, else in memory); the edge's
   * KEY_CHECK asks it too.
   */
  keys(): KeyRegistry {
    if (this.registry) return this.registry;
    const { prefix, warning } = this.need('keys');
    if (warning !== null) this.log.warn(warning);
    const redis = this.redisClient();
    if (redis === null) return (this.registry = new MemoryKeyRegistry());
    return (this.registry = new RedisKeyRegistry(redis, { prefix }));
  }

  /**
   * With REDIS_URL, the bundled services keep their state in Redis and cannot
   * start without it: a clear error naming the variable, rather than a store
   * failure deep inside their start-up.
   */
  private redisReachable(): Promise<void> {
    const redis = this.redisClient();
    this.reachable ??=
      redis === null
        ? Promise.resolve()
        : redis.ping().then(
            () => undefined,
            (err: Error) => {
              const url = new URL(this.need('keys').redisUrl!);
              url.password = url.password && '***';
              throw new SettingsError(
                'REDIS_URL',
                `the bundled services keep their state in Redis and could not reach ${url.href} at start (${this.lastRedisError ?? err.message})`,
              );
            },
          );
    return this.reachable;
  }

  /** A service's settings: loadSettings reads them for every service this process runs, so never null when asked. */
  private need<K extends keyof BundledSettings>(service: K): NonNullable<BundledSettings[K]> {
    const settings = this.settings[service];
    if (settings === null) throw new Error(`bundled ${service}: its settings were not loaded (it runs elsewhere)`);
    return settings;
  }

  /** The one Redis connection of the bundled services (REDIS_URL), made on first use; null without REDIS_URL. */
  private redisClient(): Redis | null {
    if (this.redis) return this.redis;
    const { redisUrl } = this.need('keys');
    if (redisUrl === null) return null;
    this.redis = createRedisClient(redisUrl, {
      ...SERVICE_REDIS,
      onError: (err) => {
        this.lastRedisError = err.message;
        this.log.warn({ err: err.message }, 'bundled services redis error');
      },
    });
    return this.redis;
  }
}
