import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { startEdge, type Edge } from '../gateway.ts';
import type { Settings } from '../settings/settings.ts';
import type { PrimaryMessage, WorkerMessage } from './messages.ts';

/**
 * One edge worker (WORKERS > 1), forked by the primary (primary.ts) with the upstream URLs in its environment: the
 * edge alone, on the public port the cluster shares, without an admin listener. It answers the primary's metrics
 * requests, reloads its rules on SIGHUP and drains on SIGTERM, then exits 0. SIGINT is left to the primary, which
 * passes it on as SIGTERM (a Ctrl-C reaches the whole process group). A worker whose primary is gone exits at once
 * (node:cluster's own rule when the IPC channel closes). When the store fails open, its per-process fallback buckets
 * get 1 / (EXPECTED_INSTANCES × WORKERS) of each limit: the workers of all the gateways together admit the limit.
 */
export async function runEdgeWorker(settings: Settings, rootLog: Logger, slot: number): Promise<number> {
  const log = rootLog.child({ worker: slot });
  const send = (m: WorkerMessage) => {
    // The primary may be gone meanwhile: the channel's closing ends this process (node:cluster), not a send error.
    if (process.connected) process.send!(m, undefined, undefined, () => {});
  };
  // Installed first: SIGHUP's default action ends a process, and one sent while this worker boots must not (the rule
  // file is read at boot anyway).
  let reload = () => {};
  process.on('SIGHUP', () => reload());
  process.on('SIGINT', () => {});
  let edge: Edge | undefined;
  // EXPECTED_INSTANCES counts gateways; each of their workers has its own fallback buckets (FAIL_MODE=open).
  const perWorker = { ...settings, expectedInstances: settings.expectedInstances * settings.workers };
  edge = await startEdge(perWorker, log, {
    workerSlot: slot,
    onReadinessChange: () => edge && send({ gateway: 'readiness', readiness: edge.readiness() }),
  });
  const serving = edge;
  process.on('message', (m: PrimaryMessage) => {
    if (m?.gateway !== 'metrics') return;
    void serving.metrics.registry.getMetricsAsJSON().then((metrics) => send({ gateway: 'metrics', id: m.id, metrics }));
  });
  reload = () => serving.reload();
  const host = (serving.edge.server.address() as AddressInfo).address;
  // The primary logs `edge worker serving`: one process writes it and `gateway listening`, so the log has them in order.
  send({ gateway: 'ready', host, port: serving.edge.port, readiness: serving.readiness() });

  await new Promise((resolve) => process.once('SIGTERM', resolve));
  process.once('SIGTERM', () => process.exit(1));
  log.info({ drainSeconds: settings.drainMs / 1000 }, 'edge worker draining');
  await serving.close();
  log.info('edge worker stopped');
  await new Promise<void>((resolve) => log.flush(() => resolve()));
  // The IPC channel would keep the process alive.
  process.exit(0);
}
