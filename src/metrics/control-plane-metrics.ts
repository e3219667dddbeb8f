import { Counter, Gauge, Histogram, type Metric, type Registry } from 'prom-client';
import type { RevisionStatus, StoredRevision } from '../services/control-plane/types.ts';

/**
 * The bundled control plane's metrics: builds, revisions and deployments' processes. One set per process, like
 * prom-client's default metrics, because they describe this process's control plane (one per gateway), and recording
 * them is then one call where a build finishes or a process starts, with no metrics object handed through the
 * control plane's layers. The admin listener that serves them registers them (registerControlPlaneMetrics): the
 * gateway's own registry, or the workers' primary, which runs the bundled services. No label holds a deployment id.
 */
const revisions = new Counter({
  name: 'gateway_revisions_total',
  help: "Revisions that reached each status in this process's builds",
  labelNames: ['status'] as const,
  registers: [],
});

const buildSeconds = new Histogram({
  name: 'gateway_build_duration_seconds',
  help: 'Time a revision spent BUILDING (clone, install, load check), by outcome (succeeded, failed)',
  labelNames: ['outcome'] as const,
  buckets: [1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1200],
  registers: [],
});

const processes = new Gauge({
  name: 'gateway_deployment_processes',
  help: "Deployments' processes running now (load checks included)",
  registers: [],
});

const processStarts = new Counter({
  name: 'gateway_deployment_process_starts_total',
  help: "Deployments' processes started (builds' load checks, promotions, restarts)",
  registers: [],
});

const processCrashes = new Counter({
  name: 'gateway_deployment_process_crashes_total',
  help: "Deployments' serving processes that stopped without being asked (each is restarted with backoff)",
  registers: [],
});

/** Statuses shown at zero before any build, so a rate over them exists from the first scrape. */
const SHOWN: readonly RevisionStatus[] = ['BUILDING', 'DEPLOYED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'CREATE_FAILED'];
for (const status of SHOWN) revisions.inc({ status }, 0);
for (const outcome of ['succeeded', 'failed']) buildSeconds.zero({ outcome });

const ALL: Readonly<Record<string, Metric>> = {
  gateway_revisions_total: revisions,
  gateway_build_duration_seconds: buildSeconds,
  gateway_deployment_processes: processes,
  gateway_deployment_process_starts_total: processStarts,
  gateway_deployment_process_crashes_total: processCrashes,
};

/** Serves the control plane's metrics from `registry` too (each registry at most once). */
export function registerControlPlaneMetrics(registry: Registry): void {
  for (const [name, m] of Object.entries(ALL))
    if (registry.getSingleMetric(name) === undefined) registry.registerMetric(m);
}

/**
 * A revision moved to its current status: counted, and when that ends its build (BUILDING → AWAITING_DEPLOY or
 * BUILD_FAILED) the build's time, read from its status history (the control plane's clock).
 */
export function revisionReached(rev: Pick<StoredRevision, 'status' | 'status_history'>): void {
  revisions.inc({ status: rev.status });
  if (rev.status !== 'AWAITING_DEPLOY' && rev.status !== 'BUILD_FAILED') return;
  const building = rev.status_history.findLast((h) => h.status === 'BUILDING');
  const ended = rev.status_history.at(-1);
  if (!building || !ended) return;
  const seconds = (Date.parse(ended.at) - Date.parse(building.at)) / 1000;
  if (seconds >= 0) buildSeconds.observe({ outcome: rev.status === 'BUILD_FAILED' ? 'failed' : 'succeeded' }, seconds);
}

/** A deployment's process started: counted, and up until it exits. Returns it, to wrap the call that starts it. */
export function processStarted<P extends { readonly exited: Promise<unknown> }>(proc: P): P {
  processStarts.inc();
  processes.inc();
  const down = () => processes.dec();
  proc.exited.then(down, down);
  return proc;
}

/** A serving process stopped without being asked. */
export function processCrashed(): void {
  processCrashes.inc();
}
