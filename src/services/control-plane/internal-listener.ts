import type { Logger } from 'pino';
import { listen, type Listening } from '../../listen/listen.ts';
import type { ControlPlane } from './control-plane.ts';
import type { ControlPlaneSettings } from './settings.ts';

/**
 * The listener of the endpoints a revision's pod uses (api/internal-routes.ts), on INTERNAL_PORT, all interfaces:
 * pods reach it over the cluster's network (a Service of the gateway), never through the public edge. Off (null)
 * unless INTERNAL_PORT is set: the local host's revisions ask their host over a pipe and need none of it.
 */
export async function listenInternal(
  cp: Pick<ControlPlane, 'internal'>,
  settings: Pick<ControlPlaneSettings, 'internalPort'>,
  log: Logger,
): Promise<Listening | null> {
  if (settings.internalPort === null) return null;
  const server = await listen(cp.internal, settings.internalPort, '0.0.0.0');
  log.info({ url: server.url }, 'internal endpoints listening (revision pods: artifacts, key checks)');
  return server;
}
