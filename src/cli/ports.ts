import { createServer } from 'node:net';
import { SettingsError } from '../settings/env.ts';

interface PortSettings {
  readonly port: number;
  readonly host: string | null;
  readonly adminPort: number;
  readonly adminHost: string;
}

/**
 * Before anything starts (a development key printed, the services and a deployment's process up): PORT and
 * ADMIN_PORT can be listened on. A port in use is a setting to change, reported as one (exit 2, naming the variable),
 * not an uncaught exception after a full boot. The listeners themselves still report a port taken in between
 * (listenFailure below).
 */
export async function checkPortsFree(settings: PortSettings): Promise<void> {
  if (settings.port !== 0 && settings.port === settings.adminPort)
    throw new SettingsError('ADMIN_PORT', `is PORT's port too (${settings.port}): give each listener its own`);
  for (const [port, host] of [
    [settings.port, settings.host],
    [settings.adminPort, settings.adminHost],
  ] as const) {
    if (port === 0) continue;
    const err = await tryListen(port, host);
    if (err !== null) throw listenFailure(err, settings) ?? err;
  }
}

/** A listener's EADDRINUSE / EACCES on PORT or ADMIN_PORT as a SettingsError naming the variable; else null. */
export function listenFailure(err: unknown, settings: PortSettings): SettingsError | null {
  const { code, port } = err as { code?: string; port?: number };
  const variable = port === settings.port ? 'PORT' : port === settings.adminPort ? 'ADMIN_PORT' : null;
  if (variable === null) return null;
  if (code === 'EADDRINUSE')
    return new SettingsError(variable, `port ${port} is already in use: stop what listens on it or set ${variable}`);
  if (code === 'EACCES')
    return new SettingsError(variable, `not allowed to listen on port ${port}: set ${variable} to a port above 1023`);
  return null;
}

function tryListen(port: number, host: string | null): Promise<NodeJS.ErrnoException | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(Object.assign(err, { port })));
    server.listen({ port, ...(host !== null && { host }) }, () => server.close(() => resolve(null)));
  });
}
