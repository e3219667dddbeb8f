import { getConfig, MemorySaver, type BaseCheckpointSaver } from '@langchain/langgraph';
import { Hono } from 'hono';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { applyAppEnv, importExport, readAppConfig, type AppConfig } from './app-config.ts';
import { corsMiddleware } from './api/cors.ts';
import { configurableHeaderFilter } from './api/runs/configurable-headers.ts';
import { loadHttpApp, mountHttpApp, publicPathTest } from './api/meta/custom-routes.ts';
import { registerSdkLogger } from './sdk-logger.ts';
import { graphDefaults } from './graph-defaults.ts';
import { ensureDefaultAssistants } from './api/assistants/lookup.ts';
import { assistantOperations } from './api/assistants/assistants.ts';
import { SchemaParser } from './api/assistants/schema-parser.ts';
import { GraphSourceSchemas } from './api/assistants/source-schemas.ts';
import { authenticate, type AgentEnv, type ApiKeyVerifier } from './auth/authenticate.ts';
import type { ServerContext } from './context.ts';
import { DEFAULT_AGENT_QUOTAS, type AgentQuotas } from './quotas.ts';
import { CronScheduler } from './runs/cron-scheduler.ts';
import { cronOperations } from './api/crons/crons.ts';
import { authHandlers, type AuthHandlers } from './auth/custom-handlers.ts';
import { mountDocs } from './api/meta/docs.ts';
import { jsonBodyLimit, notFoundJson, serviceErrorHandler } from '../shared/http-errors.ts';
import { loadGraphs } from './graphs.ts';
import { MemoryAgentStore } from './store/memory-agent-store.ts';
import { MemoryItemStore } from './store/memory-item-store.ts';
import type { CountedItemStore } from './store/item-quota.ts';
import { openApiDocument } from './api/meta/openapi.ts';
import { settleOrphans } from './runs/orphans.ts';
import { OrphanSweep } from './runs/orphan-sweep.ts';
import { LocalRunRelay } from './relay/local-run-relay.ts';
import type { RunRelay } from './relay/run-relay.ts';
import { TtlSweeper } from './ttl-sweeper.ts';
import { mount, type Operation } from './api/operations.ts';
import { Runner } from './runs/runner.ts';
import { Webhooks, type WebhookOptions } from './runs/webhooks.ts';
import { runControlOperations } from './api/runs/control-routes.ts';
import { bulkCancelOperation } from './api/runs/bulk-cancel.ts';
import { threadPruneOperation } from './api/threads/prune.ts';
import { runOperations } from './api/runs/create-routes.ts';
import type { AgentStore } from './store/agent-store.ts';
import { storeOperations } from './api/store/items.ts';
import { SERVER_VERSION, systemOperations } from './api/meta/system.ts';
import { threadStateOperations } from './api/threads/state.ts';
import { threadStreamOperation } from './api/threads/stream-route.ts';
import { threadStorageOperation } from './api/threads/storage-route.ts';
import { threadOperations } from './api/threads/threads.ts';
import { protocolOperations } from './api/threads/protocol-routes.ts';
import { uiOperations } from './api/ui/ui-routes.ts';
import { bundleUi } from './ui/ui-bundle.ts';
import { ProtocolSockets } from './protocol/socket.ts';
import { ProtocolThreads } from './protocol/threads.ts';

/**
 * The Agent Server of one deployment: it serves the app named by an app
 * config (graphs and optional custom auth) as a Hono app, alone (main.ts)
 * or behind the edge. `createAgentServer` loads the app as the official
 * server does (its `env` block first, then the logger app code takes with
 * `getLogger()`, then its modules), creates the default assistants (with the
 * per-graph configuration of LANGGRAPH_CONFIG) and returns the app with a
 * `close` that cancels running graphs. A module of the app that fails to load
 * (or a `ui` component that fails to bundle, ui/ui-bundle.ts) rejects with a GraphLoadError (app-config.ts).
 */
export interface AgentServerOptions {
  /** Path of the app config (`langgraph.json`). */
  readonly configPath: string;
  /** The environment holds the app's env already (a deployment's process: its build read it); the config's is not read. */
  readonly envGiven?: boolean;
  /**
   * Checks `x-api-key` when the app has no custom auth handler (and for the design studio's requests when it has one).
   */
  readonly verifyApiKey: ApiKeyVerifier;
  /** When set, only keys of this organisation (the deployment's owner) are accepted. */
  readonly org?: string;
  readonly log: Logger;
  /** Default: in memory. */
  readonly store?: AgentStore;
  /** Default: in memory (LangGraph's MemorySaver). */
  readonly checkpointer?: BaseCheckpointSaver;
  /**
   * The long-term memory store (`/store/items`, a graph's `config.store`), counting its items for the quotas. Default:
   * in memory (LangGraph's InMemoryStore with counts).
   */
  readonly items?: CountedItemStore;
  /** Idle time before a `: heartbeat` comment on a run stream; default 10 s. */
  readonly heartbeatMs?: number;
  /** Largest request body; default 10 MiB. */
  readonly maxBodyBytes?: number;
  /** Deepest nesting of a JSON body (MAX_JSON_DEPTH); default 64. Deeper answers 422 `json_too_deep`. */
  readonly maxJsonDepth?: number;
  /** How often the cron scheduler looks for due crons; default 1 s. */
  readonly cronTickMs?: number;
  /**
   * How often expired store items and threads are swept (TTL_SWEEP_MS); default 1 min. Expired store items are
   * invisible at once whatever this is; an expired thread lives until the sweep.
   */
  readonly ttlSweepMs?: number;
  /** Limits on crons and store items (settings.ts); each one not given takes its default (quotas.ts). */
  readonly quotas?: Partial<AgentQuotas>;
  /** Runs' webhooks: the hosts allowed although private (WEBHOOK_HOSTS_ALLOWED), the timeout and retries. */
  readonly webhooks?: WebhookOptions;
  /**
   * What the servers sharing the store tell each other about runs (frames, cancels, runs going on): a RedisRunRelay
   * when several servers may share the store. Default: the in-process relay of a server alone.
   */
  readonly relay?: RunRelay;
}

export interface AgentServer {
  readonly app: Hono<AgentEnv>;
  /** Graph names of the app. */
  readonly graphs: readonly string[];
  /** True when the app brings its own auth handler. */
  readonly customAuth: boolean;
  /**
   * The thread-centric protocol's WebSockets: `sockets.attach(listening.server)` serves them on the HTTP server the
   * app listens on (with the app in front of it, e.g. the bundled services' guard, as the second argument).
   */
  readonly sockets: Pick<ProtocolSockets, 'attach'>;
  /** The cron scheduler (it ticks by itself; `fireDue` runs one tick now). */
  readonly crons: Pick<CronScheduler, 'fireDue'>;
  /** Stops the cron scheduler, cancels every run, waits for them, closes the store. */
  close(): Promise<void>;
}

/**
 * The operations left once the groups `http.disable_<group>` turns off are taken out: assistants, threads (with their
 * state and stream), runs (with crons), store, meta (/ok, /info).
 */
function served(ops: Operation[], disabled: AppConfig['disabled']): Operation[] {
  const group: Readonly<Record<string, 'assistants' | 'threads' | 'runs' | 'store' | 'meta'>> = {
    Assistants: 'assistants',
    Threads: 'threads',
    Runs: 'runs',
    Crons: 'runs',
    Store: 'store',
    System: 'meta',
  };
  return ops.filter((op) => {
    const g = group[op.tag];
    return g === undefined || !disabled.has(g);
  });
}

/** The node that is running the caller (LangGraph's run config, when inside a run), for the app's log lines. */
function currentNode(): string | undefined {
  try {
    const node = getConfig()?.metadata?.langgraph_node;
    return typeof node === 'string' ? node : undefined;
  } catch {
    return undefined;
  }
}

export async function createAgentServer(options: AgentServerOptions): Promise<AgentServer> {
  const { log, heartbeatMs = 10_000, maxBodyBytes = 10 * 1024 * 1024 } = options;
  const config = await readAppConfig(options.configPath, { envGiven: options.envGiven === true });
  const envSet = applyAppEnv(config);
  if (envSet.length > 0) log.info({ variables: envSet }, 'app env applied');
  // Before the app's modules load: a graph may take the logger at import.
  registerSdkLogger(log, currentNode);
  const checkpointer = options.checkpointer ?? new MemorySaver();
  const items = options.items ?? new MemoryItemStore();
  const graphs = await loadGraphs(config, checkpointer, items);
  let handlers: AuthHandlers | null = null;
  if (config.auth !== null) {
    const where = `${config.configFile}: auth.path`;
    handlers = authHandlers(await importExport(config.auth, where), where);
  }
  const httpApp = config.httpApp === null ? null : await loadHttpApp(config.httpApp, config.configFile);
  const uiBundles = await bundleUi(dirname(config.configFile), config.ui, config.uiShared);
  const store = options.store ?? new MemoryAgentStore();
  await ensureDefaultAssistants(store, graphs, graphDefaults(config.descriptions));
  const webhooks = new Webhooks(log, options.webhooks);
  const relay = options.relay ?? new LocalRunRelay();
  const runner = new Runner({ store, graphs, checkpointer, log, webhooks, relay });
  const ctx: ServerContext = {
    store,
    graphs,
    runner,
    checkpointer,
    items,
    log,
    heartbeatMs,
    configurableHeaders: configurableHeaderFilter(config.configurableHeaders),
    quotas: { ...DEFAULT_AGENT_QUOTAS, ...options.quotas },
    webhooks,
    relay,
    protocolThreads: new ProtocolThreads(),
    sourceSchemas: new GraphSourceSchemas(config.graphs, new SchemaParser(), log),
  };
  const orphaned = await settleOrphans(ctx);
  if (orphaned > 0)
    log.warn({ runs: orphaned }, 'runs left unfinished by a server that stopped were recorded as error');
  const orphanSweep = new OrphanSweep(ctx);
  orphanSweep.start();
  const scheduler = new CronScheduler(ctx, options.cronTickMs);
  const sweeper = new TtlSweeper(ctx, options.ttlSweepMs);
  const ops = served(
    [
      ...systemOperations(),
      ...assistantOperations(ctx),
      threadPruneOperation(ctx),
      ...threadOperations(ctx),
      ...threadStateOperations(ctx),
      threadStorageOperation(ctx),
      threadStreamOperation(ctx),
      ...protocolOperations(ctx, ctx.protocolThreads),
      ...runOperations(ctx),
      ...runControlOperations(ctx),
      bulkCancelOperation(ctx),
      ...cronOperations(ctx),
      ...storeOperations(ctx),
      ...uiOperations(ctx, uiBundles),
    ],
    config.disabled,
  );

  const app = new Hono<AgentEnv>();
  app.use('*', corsMiddleware(config.cors));
  app.use('*', jsonBodyLimit(maxBodyBytes));
  mountDocs(app, {
    title: 'Agent Server API',
    document: () =>
      openApiDocument(ops, {
        title: 'Agent Server API',
        version: SERVER_VERSION,
        description: `Assistants, threads, streamed and scheduled runs, and the long-term memory store of this deployment. Graphs: ${graphs.names.join(', ')}.`,
        customAuth: handlers?.authenticate != null,
      }),
  });
  const auth = authenticate({
    handlers,
    verifyApiKey: options.verifyApiKey,
    org: options.org,
    log,
    disableStudioAuth: config.disableStudioAuth,
  });
  // `http.app`: as the official server mounts it, after authentication and before the API routes (its routes win
  // over the API's, its middleware sees every API request). Only the public paths (/ok, /info, the docs) skip it.
  if (httpApp !== null) mountHttpApp(app, httpApp, auth, publicPathTest(ops));
  mount(app, ops, auth, options.maxJsonDepth);
  app.notFound(notFoundJson);
  app.onError(serviceErrorHandler(log, 'agent server'));
  log.info({ config: config.configFile, graphs: graphs.names, customAuth: handlers !== null }, 'agent server ready');
  scheduler.start();
  sweeper.start();
  const sockets = new ProtocolSockets(ctx, ctx.protocolThreads, app, log);

  return {
    app,
    sockets,
    graphs: graphs.names,
    customAuth: handlers?.authenticate != null,
    crons: scheduler,
    async close() {
      sockets.close();
      await scheduler.stop();
      await sweeper.stop();
      await orphanSweep.stop();
      await runner.close();
      await relay.close();
      webhooks.close();
      await ctx.sourceSchemas.close();
      await store.close();
    },
  };
}
