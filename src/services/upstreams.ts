import type { Logger } from 'pino';
import { createUpstream, type Upstream } from '../proxy/forward.ts';
import type { Settings } from '../settings/settings.ts';
import { BundledServices, type BundledService } from './bundled.ts';
import type { ControlPlaneOptions } from './control-plane/control-plane.ts';
import { internalHeaders } from './internal-auth.ts';

export interface ServiceUpstreams {
  readonly controlPlane: Upstream;
  readonly agentServer: Upstream;
  /** The services started in this process (none when both URLs are set): keys, the default deployment. */
  readonly bundled: BundledServices;
  /** Closes the pools, then the bundled services. */
  close(): Promise<void>;
}

/**
 * The edge's two service upstreams: CONTROL_PLANE_URL / AGENT_SERVER_URL, else the bundled services started here.
 * As many upstream connections as client connections: every request in flight (an open stream included) has its
 * own, so minutes-long streams never queue the requests behind them in the pool.
 */
export async function serviceUpstreams(
  settings: Settings,
  log: Logger,
  deployments: Pick<ControlPlaneOptions, 'routes' | 'addressing'>,
): Promise<ServiceUpstreams> {
  const bundled = new BundledServices(settings.bundled, log);
  const owned: BundledService[] = [];
  const upstreamAt = async (name: string, url: string | null, start: () => Promise<BundledService>) => {
    // A bundled service (here, or the primary's for a worker) answers only requests carrying this boot's secret.
    const at = (to: string) =>
      createUpstream(name, to, settings.maxConnections, { requestHeaders: internalHeaders(to) });
    if (url !== null) return at(url);
    const service = await start();
    owned.push(service);
    return at(service.url);
  };
  const controlPlane = await upstreamAt('control-plane', settings.controlPlaneUrl, () =>
    bundled.controlPlane(deployments),
  );
  const agentServer = await upstreamAt('agent-server', settings.agentServerUrl, () => bundled.agentServer());
  return {
    controlPlane,
    agentServer,
    bundled,
    async close() {
      await Promise.all([controlPlane.pool.close(), agentServer.pool.close(), ...owned.map((o) => o.close())]);
      await bundled.close();
    },
  };
}
