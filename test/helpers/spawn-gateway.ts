import { startGatewayProcess, type GatewayProcess, type GatewayProcessOptions } from './gateway-process.ts';

/**
 * `node bin/gateway.js start` as a child process, the way it runs in
 * production (see gateway-process.ts), with a graceful `stop`: SIGTERM, then
 * SIGKILL if it has not exited after the grace period.
 */
export interface SpawnedGateway extends GatewayProcess {
  /** Resolves once the process has exited. Idempotent. */
  stop(graceMs?: number): Promise<void>;
}

export async function spawnGateway(
  env: Record<string, string>,
  readyTimeoutMs = 30_000,
  options: GatewayProcessOptions = {},
): Promise<SpawnedGateway> {
  const gateway = await startGatewayProcess(env, readyTimeoutMs, options);
  let stopping: Promise<void> | undefined;
  const stop = (graceMs = 5000) =>
    (stopping ??= (async () => {
      gateway.signal('SIGTERM');
      const timer = setTimeout(() => void gateway.kill(), graceMs);
      await gateway.exited;
      clearTimeout(timer);
    })());
  return { ...gateway, stop };
}
