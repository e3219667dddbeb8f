import type { Logger } from 'pino';
import { clientIpSettings } from './edge/client-ip-settings.ts';
import { edgeApp } from './edge/app.ts';
import { edgeHandler } from './edge/handler.ts';
import { limitStep } from './edge/limit.ts';
import { router } from './edge/route.ts';
import { storeFromSettings } from './limiter/from-settings.ts';
import { MemoryLimiter } from './limiter/memory-limiter.ts';
import { listen, type Listening } from './listen.ts';
import { createUpstream, type Upstream } from './proxy/forward.ts';
import { compile } from './rules/compile.ts';
import { loadRuleFile, regionRuleFile } from './rules/load.ts';
import { echoUpstream } from './services/echo-upstream.ts';
import type { Settings } from './settings.ts';
import { adminApp } from './admin/app.ts';

export interface Gateway {
  readonly edge: Listening;
  readonly admin: Listening;
  readonly upstreams: { readonly controlPlane: Upstream; readonly agentServer: Upstream };
  close(): Promise<void>;
}

/** Boot: settings → rules → store → upstreams → edge and admin listeners. */
export async function startGateway(settings: Settings, log: Logger): Promise<Gateway> {
  const rulesFile = regionRuleFile(settings.rulesDir, settings.region);
  const matcher = compile(loadRuleFile(rulesFile).rules);
  const store = storeFromSettings(settings);
  const owned: Listening[] = [];

  const upstreamAt = async (name: string, url: string | null): Promise<Upstream> => {
    if (url !== null) return createUpstream(name, url);
    const echo = await listen(echoUpstream(name), 0, '127.0.0.1');
    owned.push(echo);
    log.warn({ upstream: name, url: echo.url }, 'no upstream URL set: serving the built-in echo upstream');
    return createUpstream(name, echo.url);
  };
  const upstreams = {
    controlPlane: await upstreamAt('control-plane', settings.controlPlaneUrl),
    agentServer: await upstreamAt('agent-server', settings.agentServerUrl),
  };

  let storeFailing = false;
  const limit = limitStep({
    matcher: () => matcher,
    limiter: store.limiter,
    fallback: new MemoryLimiter({ maxKeys: settings.memoryMaxKeys }),
    failMode: settings.failMode,
    scheme: { prefix: settings.keyPrefix, region: settings.region, secret: settings.identitySecret },
    onStoreError: (err) => {
      if (!storeFailing) log.error({ err: err.message, failMode: settings.failMode }, 'rate limit store failing');
      storeFailing = true;
    },
  });
  const handle = edgeHandler({
    limit,
    route: router(upstreams),
    ...clientIpSettings(settings),
    forward: { headersTimeoutMs: settings.upstreamTimeoutMs, maxBodyBytes: settings.maxBodyBytes },
    log,
  });
  // Not listening before the store answers: the first requests would otherwise all be store errors.
  if (!(await withinMs(store.connected(), STORE_BOOT_WAIT_MS))) {
    log.warn({ store: store.kind, failMode: settings.failMode }, 'rate limit store not connected at boot');
  }
  const edge = await listen(edgeApp(handle), settings.port);
  const admin = await listen(adminApp({ ready: () => true }), settings.adminPort);
  if (settings.identitySecretIsDefault && store.kind !== 'memory') {
    log.warn('IDENTITY_SECRET is unset: bucket keys use the public development secret; set it in production');
  }
  log.info({ port: edge.port, adminPort: admin.port, region: settings.region, rules: rulesFile, store: store.kind }, 'gateway listening');

  return {
    edge,
    admin,
    upstreams,
    async close() {
      await Promise.all([edge.close(), admin.close()]);
      await Promise.all([
        store.limiter.close(),
        upstreams.controlPlane.pool.close(),
        upstreams.agentServer.pool.close(),
        ...owned.map((o) => o.close()),
      ]);
    },
  };
}

/** How long boot waits for a Redis store's first connection before serving anyway (FAIL_MODE then applies). */
const STORE_BOOT_WAIT_MS = 3000;

function withinMs(p: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<boolean>((resolve) => (timer = setTimeout(resolve, ms, false)))]).finally(() => clearTimeout(timer));
}
