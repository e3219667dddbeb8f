import type { Logger } from 'pino';
import { describeDevelopmentKey } from '../keys/bootstrap.ts';
import { listen, type Listening } from '../listen.ts';
import { createControlPlane } from './control-plane/control-plane.ts';
import { loadControlPlaneSettings } from './control-plane/settings.ts';
import { echoUpstream } from './echo-upstream.ts';

export interface BundledService {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * The bundled control plane, in this process on a loopback port, for a
 * gateway started without CONTROL_PLANE_URL. Its settings come from the same
 * environment (REGION, REDIS_URL, SECRETS_KEY, BUILD_*). A development API
 * key made at first start is printed once on stdout, never logged.
 */
export async function startBundledControlPlane(env: NodeJS.ProcessEnv, log: Logger): Promise<BundledService> {
  const cp = await createControlPlane(loadControlPlaneSettings(env), log);
  const server = await listen(cp.app, 0, '127.0.0.1');
  if (cp.devKey) process.stdout.write(describeDevelopmentKey(cp.devKey) + '\n');
  return {
    url: server.url,
    async close() {
      await server.close();
      await cp.close();
    },
  };
}

/** The echo upstream (a development stand-in) on a loopback port. */
export async function startEcho(name: string, log: Logger): Promise<BundledService> {
  const server: Listening = await listen(echoUpstream(name), 0, '127.0.0.1');
  log.warn({ upstream: name, url: server.url }, 'no upstream URL set: serving the built-in echo upstream');
  return { url: server.url, close: () => server.close() };
}
