import type { Readiness } from '../admin/app.ts';

/**
 * What the primary and its edge workers say to each other over the cluster's IPC channel. Signals carry the rest:
 * SIGHUP reloads a worker's rules, SIGTERM drains it.
 */
export type WorkerMessage =
  /** The worker's edge listens: its address and readiness. */
  | { readonly gateway: 'ready'; readonly host: string; readonly port: number; readonly readiness: Readiness }
  /** Its readiness changed (rules reloaded, store breaker moved, draining). */
  | { readonly gateway: 'readiness'; readonly readiness: Readiness }
  /** The answer to a metrics request: `registry.getMetricsAsJSON()`. */
  | { readonly gateway: 'metrics'; readonly id: number; readonly metrics: unknown[] };

export type PrimaryMessage = { readonly gateway: 'metrics'; readonly id: number };

/** The environment variable that makes `gateway start` an edge worker, holding its slot (1..WORKERS). */
export const WORKER_SLOT_VARIABLE = 'GATEWAY_WORKER_SLOT';

export function isWorkerMessage(m: unknown): m is WorkerMessage {
  return typeof m === 'object' && m !== null && typeof (m as { gateway?: unknown }).gateway === 'string';
}
