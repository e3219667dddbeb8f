import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { consoleOutput, type Output } from '../../process/output.ts';
import { listen } from '../../listen/listen.ts';
import { createLogger } from '../../log.ts';
import { installProcessGuards } from '../../process/guards.ts';
import type { Redis } from 'ioredis';
import { closeRedis, createRedisClient, SERVICE_REDIS } from '../../redis-client.ts';
import { SettingsError, type Env } from '../../settings/env.ts';
import { AppConfigError, GraphLoadError } from './app-config.ts';
import { createAgentServer } from './app.ts';
import { fixedKeyVerifier } from './auth/authenticate.ts';
import { loadAgentServerSettings } from './settings.ts';
import { openAgentStorage, type AgentStorage } from './store/open-storage.ts';

/**
 * The Agent Server alone: `npx tsx src/services/agent-server/main.ts`
 * (port AGENT_SERVER_PORT, default 8123; app APP_CONFIG, default the
 * example app). API keys from AGENT_SERVER_API_KEYS; in development
 * without any, one random key is made and printed. Its data in PostgreSQL with DATABASE_URI, else in Redis with
 * REDIS_URL (or REDIS_URI), else in memory (store/open-storage.ts). Runs until SIGTERM/SIGINT.
 *
 * An app that cannot be served ends the process with one line on stderr, no stack: `agent server: <reason>`. Exit
 * codes: 2 for settings or an app config to fix (langgraph.json, a missing file; a DATABASE_URI or REDIS_URL that
 * cannot be reached at start), 3 when a module of the app fails to
 * load (`agent server: graphs.<name>: <import error>`, a GraphLoadError), 1 for any other failure to start.
 */
export async function runAgentServer(
  env: Env,
  out: Output = consoleOutput,
  /** Installs the process-level policy (process/guards.ts): the program's entry point does, a test does not. */
  guard = false,
): Promise<number> {
  let settings;
  try {
    // Read once, here. The app's own variables (langgraph.json `env`, LANGGRAPH_CONFIG) are read as the app loads.
    settings = loadAgentServerSettings(env);
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    out.err(`agent server: ${err.message}`);
    return 2;
  }
  const log = createLogger(settings.logLevel);
  if (guard) installProcessGuards(log);
  let keys = settings.apiKeys;
  if (keys.length === 0 && settings.development) {
    keys = [`dev-${randomBytes(24).toString('base64url')}`];
    out.log(
      `Development API key for this run (set AGENT_SERVER_API_KEYS to choose your own):\n  X-Api-Key: ${keys[0]}`,
    );
  } else if (keys.length === 0) {
    log.warn('AGENT_SERVER_API_KEYS is empty: no API key is accepted');
  }
  let redis: Redis | null = null;
  let storage: AgentStorage;
  try {
    storage = await openAgentStorage({
      database: settings.database,
      redis: () =>
        (redis =
          settings.redisUrl === null
            ? null
            : createRedisClient(settings.redisUrl, {
                ...SERVICE_REDIS,
                onError: (err) => log.warn({ err: err.message }, 'redis error'),
              })),
      redisPrefix: settings.storePrefix,
      log,
    });
    if (redis !== null)
      await (redis as Redis).ping().catch((err: Error) => {
        throw new SettingsError(
          'REDIS_URL',
          `the Agent Server keeps its data in Redis and could not reach it at start (${err.message})`,
        );
      });
  } catch (err) {
    if (redis !== null) await closeRedis(redis);
    if (!(err instanceof SettingsError)) throw err;
    out.err(`agent server: ${err.message}`);
    return 2;
  }
  const letGo = async () => {
    await storage.close();
    if (redis !== null) await closeRedis(redis);
  };
  let server;
  try {
    server = await createAgentServer({
      store: storage.store,
      checkpointer: storage.checkpointer,
      items: storage.items,
      relay: storage.relay,
      configPath: settings.appConfig,
      verifyApiKey: fixedKeyVerifier(keys, settings.org),
      org: settings.org,
      log,
      heartbeatMs: settings.heartbeatMs,
      ttlSweepMs: settings.ttlSweepMs,
      maxJsonDepth: settings.maxJsonDepth,
      quotas: settings.quotas,
      webhooks: { allowed: settings.webhookHostsAllowed },
    });
  } catch (err) {
    await letGo();
    if (err instanceof GraphLoadError) {
      log.debug({ err: { message: String((err.cause as Error)?.stack ?? err.cause) } }, 'app load failed');
      out.err(`agent server: ${err.line}`);
      return 3;
    }
    if (err instanceof AppConfigError) {
      out.err(`agent server: ${err.message}`);
      return 2;
    }
    const message = err instanceof Error ? err.message : String(err);
    out.err(`agent server: failed to start: ${message.split('\n')[0]}`);
    return 1;
  }
  const listening = await listen(server.app, settings.port);
  server.sockets.attach(listening.server);
  log.info({ url: listening.url, graphs: server.graphs, docs: `${listening.url}/docs` }, 'agent server listening');
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  log.info({ signal }, 'shutting down');
  await server.close();
  await listening.close(5000);
  if (redis !== null) await closeRedis(redis);
  log.flush();
  return 0;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await runAgentServer(process.env, consoleOutput, true);
}
