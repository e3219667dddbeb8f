/**
 * Where each deployment is served: the routing table between the control
 * plane, which writes it when a revision is DEPLOYED, rolled over or deleted,
 * and the edge, which reads it on every request under `/deployments/{id}` (or
 * `{id}.{DEPLOYMENTS_DOMAIN}`). Reads are synchronous (the hot path); writes
 * reach every edge sharing the table within a second.
 */
export interface DeploymentRoute {
  readonly deploymentId: string;
  /** The revision whose Agent Server serves the deployment now. */
  readonly revisionId: string;
  /** The organisation (tenant) owning the deployment. */
  readonly tenantId: string;
  /** The loopback URL of that revision's Agent Server process, e.g. `http://127.0.0.1:41234`. */
  readonly target: string;
  /**
   * Set when no process serves the deployment now, though it exists: `starting` (the gateway restarts, or its process
   * is being started again after a crash) or `failed` (its revision could not be started again: the deployment's
   * `serving_error` says why). The edge answers 503 naming the deployment instead of trying `target`.
   */
  readonly unavailable?: RouteUnavailable;
}

export type RouteUnavailable = 'starting' | 'failed';

/** The fields a table stores of a route (a copy: what a caller does with its object afterwards changes nothing). */
export function storedRoute(r: DeploymentRoute): DeploymentRoute {
  const { deploymentId, revisionId, tenantId, target, unavailable } = r;
  return unavailable === undefined
    ? { deploymentId, revisionId, tenantId, target }
    : { deploymentId, revisionId, tenantId, target, unavailable };
}

export interface RouteTable {
  /** The route of a deployment now, or undefined when it has none (unknown, not yet deployed, or deleted). */
  get(deploymentId: string): DeploymentRoute | undefined;
  /** Serves `route.deploymentId` at `route.target` from now on (a rollover replaces the previous target). */
  set(route: DeploymentRoute): Promise<void>;
  /** The deployment is no longer served. */
  delete(deploymentId: string): Promise<void>;
  /** Every route known now. */
  all(): readonly DeploymentRoute[];
  close(): Promise<void>;
}
