import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from 'pino';
import { adminApp, type Readiness } from './admin/app.ts';
import type { DeploymentAddressing } from './routing/deployment-url.ts';
import { routeTableFromSettings } from './routing/from-settings.ts';
import type { RouteTable } from './routing/route-table.ts';
import { DeploymentUpstreams } from './routing/deployment-upstreams.ts';
import { unmapIPv4 } from './edge/client-ip.ts';
import { edgeHandler } from './edge/handler.ts';
import { ipIdentity } from './rules/identity.ts';
import { edgeUpgradeHandler } from './edge/upgrade.ts';
import { OpenWebSockets } from './edge/websockets.ts';
import { keyCheck } from './edge/key-check.ts';
import { limitStep } from './edge/limit.ts';
import { RunHolds } from './edge/run-holds.ts';
import type { LimitsAdminOptions } from './admin/limits.ts';
import { orgPlans } from './edge/org-plans.ts';
import { LiveOverrides, overrideStoreFromSettings } from './limiter/overrides.ts';
import { router } from './routing/router.ts';
import { BreakerLimiter } from './limiter/breaker.ts';
import { keySchemeFromSettings, storeFromSettings } from './limiter/from-settings.ts';
import { MemoryLimiter } from './limiter/memory-limiter.ts';
import { listen, type Listening } from './listen/listen.ts';
import { createMetrics, type Metrics } from './metrics/metrics.ts';
import type { Upstream } from './proxy/forward.ts';
import { regionRuleFile } from './rules/load.ts';
import { RuleSource, type ReloadResult } from './rules/rule-source.ts';
import { serviceUpstreams } from './services/upstreams.ts';
import type { Settings } from './settings/settings.ts';
import type { KeyRegistry } from './keys/types.ts';

/** The edge without an admin listener: what `gateway start` runs in one process, and in each edge worker. */
export interface Edge {
  readonly edge: Listening;
  readonly upstreams: { readonly controlPlane: Upstream; readonly agentServer: Upstream };
  readonly metrics: Metrics;
  /**
   * Where each deployment is served: read by the edge on every request under `/deployments/{id}` (or the host form),
   * written by the control plane. In Redis with REDIS_URL (shared by every edge on it), else this process's own.
   */
  readonly routes: RouteTable;
  /** The base of a deployment's `url`: PUBLIC_URL (else the edge's own address) and DEPLOYMENTS_DOMAIN. */
  addressing(): DeploymentAddressing;
  /** The rule file in force, and the store. */
  readonly rules: { readonly file: string; version(): string };
  readonly storeKind: 'memory' | 'redis' | 'redis-cluster';
  /** What an operator's bucket reads and resets (admin/limits.ts) work on: the rules in force and the store. */
  readonly buckets: Omit<LimitsAdminOptions, 'token' | 'log'>;
  /** Plans per organisation in force (the admin listener's /limits/overrides changes them). */
  readonly overrides: LiveOverrides;
  /** Where the deployment route table lives. */
  readonly routesKind: 'memory' | 'redis';
  /** What /readyz reports for this edge. */
  readiness(): Readiness;
  /** The key registry of the bundled control plane (the admin listener's /keys), null when it runs elsewhere. */
  readonly keys: KeyRegistry | null;
  /** Re-reads the rule file; invalid files are logged and the old rules keep serving. */
  reload(): void;
  /**
   * Graceful stop: refuse new connections, report draining, let requests and streams finish within DRAIN_SECONDS,
   * then close everything.
   */
  close(): Promise<void>;
}

export interface StartEdgeOptions {
  /** An edge worker's slot (1..WORKERS): counts its requests under `gateway_worker_requests_total{worker}`. */
  readonly workerSlot?: number;
  /** Called whenever readiness() may have changed (rules reloaded, store breaker moved, draining). */
  readonly onReadinessChange?: () => void;
}

export interface Gateway extends Edge {
  readonly admin: Listening;
}

/** How long boot waits for a Redis store's first connection before serving anyway (FAIL_MODE then applies). */
const STORE_BOOT_WAIT_MS = 3000;

/** Boot: settings → rules → store → upstreams → edge and admin listeners. */
export async function startGateway(settings: Settings, log: Logger): Promise<Gateway> {
  const edge = await startEdge(settings, log);
  const adminLog = log.child({ component: 'admin' });
  const app = adminApp({
    metrics: edge.metrics.registry,
    ready: () => edge.readiness(),
    token: settings.adminToken,
    keys: edge.keys,
    overrides: { matcher: edge.buckets.matcher, overrides: edge.overrides, log: adminLog },
    buckets: { ...edge.buckets, overrides: edge.overrides, log: adminLog },
  });
  const admin = await listen(app, settings.adminPort, settings.adminHost);
  log.info(
    {
      host: (edge.edge.server.address() as AddressInfo).address,
      port: edge.edge.port,
      adminHost: settings.adminHost,
      adminPort: admin.port,
      region: settings.region,
      rules: edge.rules.file,
      version: edge.rules.version(),
      store: edge.storeKind,
      routes: edge.routesKind,
      publicUrl: edge.addressing().publicUrl,
      ...(settings.deploymentsDomain !== null && { deploymentsDomain: settings.deploymentsDomain }),
    },
    'gateway listening',
  );
  return {
    ...edge,
    admin,
    async close() {
      await edge.close();
      await admin.close(0);
    },
  };
}

/** Boot of the edge alone: settings → rules → store → upstreams → edge listener. */
export async function startEdge(settings: Settings, log: Logger, options: StartEdgeOptions = {}): Promise<Edge> {
  const changed = options.onReadinessChange ?? (() => {});
  const metrics = createMetrics(options.workerSlot);
  let storeFailing = false;
  let draining = false;
  const rules = new RuleSource(regionRuleFile(settings.rulesDir, settings.region));
  metrics.setRules(settings.region, rules.version);
  const store = storeFromSettings(settings);
  const limiter = new BreakerLimiter(store.limiter, {
    onStateChange: (state) => {
      metrics.setBreaker(state);
      if (state === 'closed') storeFailing = false;
      changed();
      (state === 'closed' ? log.info.bind(log) : log.warn.bind(log))(
        { store: store.kind, breaker: state },
        `rate limit store circuit ${state}`,
      );
    },
  });
  // The deployment route table, before the control plane that writes it; PUBLIC_URL defaults to the edge's own
  // address, known once it listens (the control plane asks when it makes a `url`).
  const routeTable = routeTableFromSettings(settings, log.child({ component: 'deployment-routes' }));
  let edgeAddress: string | null = null;
  const addressing = (): DeploymentAddressing => ({
    publicUrl: settings.publicUrl ?? edgeAddress ?? `http://localhost:${settings.port}`,
    domain: settings.deploymentsDomain,
  });
  // Upstreams: the configured URLs, else the bundled services in this process.
  const services = await serviceUpstreams(settings, log, { routes: routeTable.table, addressing });
  const upstreams = { controlPlane: services.controlPlane, agentServer: services.agentServer };
  const bundled = services.bundled;

  metrics.countRoutes(() => routeTable.table.all().length);
  const deployments = new DeploymentUpstreams(routeTable.table, { connections: settings.maxConnections });
  // Plans per organisation: only where a key registry tells a key's organisation (bundled services or KEY_CHECK).
  const overrides = new LiveOverrides(overrideStoreFromSettings(settings));
  const plans = settings.bundled.keys !== null ? orgPlans(overrides, bundled.keys()) : undefined;
  const limit = limitStep({
    ...(plans && { plans }),
    matcher: () => rules.current(),
    limiter,
    fallback: new MemoryLimiter({ maxKeys: settings.memoryMaxKeys }),
    failMode: settings.failMode,
    expectedInstances: settings.expectedInstances,
    shadowAll: settings.shadowAll,
    scheme: keySchemeFromSettings(settings),
    metrics,
    storeName: store.kind,
    onStoreError: (err) => {
      if (!storeFailing) log.error({ err: err.message, failMode: settings.failMode }, 'rate limit store failing');
      storeFailing = true;
    },
  });
  const runs = new RunHolds({ log: log.child({ component: 'run-holds' }) });
  const edgeOptions = {
    limit,
    runs,
    ...(settings.keyCheck && { keyCheck: keyCheck(bundled.keys()) }),
    route: router({
      ...upstreams,
      // The default deployment is this gateway's own Agent Server; any other, its route's target.
      deployment: (id) => (id === bundled.defaultDeploymentId ? upstreams.agentServer : deployments.get(id)),
      deploymentDown: (id) => deployments.down(id),
      domain: settings.deploymentsDomain,
    }),
    ownDeployment: () => bundled.defaultDeploymentId,
    trust: settings.trustProxy,
    ipv6PrefixBits: settings.ipv6PrefixBits,
    forward: { headersTimeoutMs: settings.upstreamTimeoutMs, maxBodyBytes: settings.maxBodyBytes },
    log,
    metrics,
    draining: () => draining,
    maxIdentityLength: settings.maxIdentityLength,
    escapedSlashes: settings.escapedSlashes,
  };
  const handle = edgeHandler(edgeOptions);
  const sockets = new OpenWebSockets(settings.webSocketMaxPerIp, metrics);
  const upgrade = edgeUpgradeHandler({
    ...edgeOptions,
    sockets,
    upstreamTimeoutMs: settings.upstreamTimeoutMs,
    idleMs: settings.webSocketIdleMs,
    maxMessageBytes: settings.maxBodyBytes,
  });
  // Not listening before the store answers: the first requests would otherwise all be store errors.
  const [, storeUp, routesRead] = await Promise.all([
    withinMs(
      overrides.start().then(() => true),
      STORE_BOOT_WAIT_MS,
    ),
    withinMs(store.connected(), STORE_BOOT_WAIT_MS),
    withinMs(
      routeTable.ready.then(() => true),
      STORE_BOOT_WAIT_MS,
    ),
  ]);
  if (!storeUp) log.warn({ store: store.kind, failMode: settings.failMode }, 'rate limit store not connected at boot');
  // Deployments answer 404 until the table is read (it keeps trying); everything else is served.
  if (!routesRead) log.warn('deployment route table not read at boot: deployments answer 404 until it is');
  const edge = await listen(handle, settings.port, settings.host, {
    maxConnections: settings.maxConnections,
    perAddress: { max: settings.httpMaxConnectionsPerIp, addressOf: connectionAddress(settings) },
    deferContinue: true,
    streamBodies: true,
    upgrade: (req, socket, head) => void upgrade(req, socket, head),
  });
  const readiness = (): Readiness => ({
    rules: rules.version,
    store: limiter.state === 'closed' ? 'ok' : settings.failMode === 'open' ? 'failing-open' : 'down',
    draining,
  });
  edgeAddress =
    settings.host === null || settings.host === '0.0.0.0' || settings.host === '::'
      ? `http://localhost:${edge.port}`
      : edge.url;
  if (settings.identitySecretIsDefault && store.kind !== 'memory') {
    log.warn('IDENTITY_SECRET is unset: bucket keys use the public development secret; set it in production');
  }

  const report = (r: ReloadResult) => {
    metrics.reloads.inc({ result: r.result });
    if (r.result === 'invalid')
      log.error({ file: rules.file, reason: r.error.message }, 'rule reload rejected: the old rules keep serving');
    else if (r.result === 'ok') {
      metrics.setRules(settings.region, r.version);
      log.info({ file: rules.file, version: r.version }, 'rules reloaded');
      changed();
    }
  };
  const reload = () => report(rules.reload());
  // The watcher has already reloaded: report its result (reloading again would only ever say "unchanged").
  rules.watch(report);
  return {
    edge,
    upstreams,
    metrics,
    routes: routeTable.table,
    addressing,
    rules: { file: rules.file, version: () => rules.version },
    storeKind: store.kind,
    buckets: {
      matcher: () => rules.current(),
      store: store.limiter,
      scheme: keySchemeFromSettings(settings),
      ipv6PrefixBits: settings.ipv6PrefixBits,
    },
    overrides,
    routesKind: routeTable.kind,
    readiness,
    keys: settings.controlPlaneUrl === null ? bundled.keys() : null,
    reload,
    async close() {
      draining = true;
      changed();
      rules.close();
      // WebSockets do not end by themselves: each gets a close frame (1001) and its client reconnects elsewhere.
      sockets.closeAll('gateway draining');
      await edge.close(settings.drainMs);
      runs.close();
      await Promise.all([
        limiter.close(),
        overrides.close(),
        deployments.close(),
        // The services before the table: stopping, the control plane marks its deployments' routes as starting again
        // (a 503, not a dead port, until the next start serves them), which needs the table still open.
        services.close(),
      ]);
      await routeTable.table.close();
    },
  };
}

function withinMs(p: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<boolean>((resolve) => (timer = setTimeout(resolve, ms, false)))]).finally(() =>
    clearTimeout(timer),
  );
}

/**
 * The address a connection counts against HTTP_MAX_CONNECTIONS_PER_IP: its peer, as IP limits count it (IPv6 by
 * IPV6_PREFIX); none for a trusted proxy (TRUST_PROXY), whose connections carry many clients.
 */
function connectionAddress(settings: Settings): (socket: Socket) => string | null {
  return (socket) => {
    const peer = unmapIPv4(socket.remoteAddress ?? '');
    if (peer === '' || settings.trustProxy.isTrusted(peer)) return null;
    return ipIdentity(peer, settings.ipv6PrefixBits);
  };
}
