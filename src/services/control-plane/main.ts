import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import { consoleOutput, type Output } from '../../process/output.ts';
import { describeDevelopmentKey } from '../../keys/bootstrap.ts';
import { listen } from '../../listen/listen.ts';
import { createLogger } from '../../log.ts';
import { installProcessGuards } from '../../process/guards.ts';
import { SettingsError, type Env } from '../../settings/env.ts';
import { createControlPlane } from './control-plane.ts';
import { listenInternal } from './internal-listener.ts';
import { loadControlPlaneSettings } from './settings.ts';

/**
 * The control plane alone: `npx tsx src/services/control-plane/main.ts`
 * (port CONTROL_PLANE_PORT, default 8081). Runs until SIGTERM/SIGINT.
 */
export async function runControlPlane(
  env: Env,
  out: Output = consoleOutput,
  /**
   * `stop` resolves when the service should stop (default: SIGTERM or SIGINT); `listening` gets its URL; `log` replaces
   * the stdout logger.
   */
  {
    stop,
    listening,
    log: given,
    guard = false,
  }: {
    stop?: Promise<unknown>;
    listening?: (url: string) => void;
    log?: Logger;
    /** Installs the process-level policy (process/guards.ts): the program's entry point does, a test does not. */
    guard?: boolean;
  } = {},
): Promise<number> {
  let settings;
  try {
    settings = loadControlPlaneSettings(env); // read once, here: everything below is handed `settings`
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    out.err(`control plane: ${err.message}`);
    return 2;
  }
  const log = given ?? createLogger(settings.logLevel);
  if (guard) installProcessGuards(log);
  const cp = await createControlPlane(settings, log);
  const server = await listen(cp.app, settings.port);
  const internal = await listenInternal(cp, settings, log);
  if (cp.devKey) out.log(describeDevelopmentKey(cp.devKey, { kind: cp.keys.kind, prefix: settings.keysPrefix }));
  log.info({ url: server.url, region: settings.region }, 'control plane listening');
  listening?.(server.url);
  const reason = await (stop ?? untilSignal());
  log.info({ reason: String(reason) }, 'shutting down');
  await server.close();
  await internal?.close();
  await cp.close();
  log.flush();
  return 0;
}

function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await runControlPlane(process.env, consoleOutput, { guard: true });
}
