import type { Region } from '../../region.ts';
import type { DeploymentStatus, DeploymentType, RevisionStatus, StoredDeployment, StoredRevision } from './types.ts';

/**
 * Where deployments and revisions live: in memory (the embedded default) or
 * Redis. One contract suite covers both. A store belongs to one region: it
 * writes records of that region only and never returns another region's.
 *
 * Writes are read-modify-write through a `change` function, which a store
 * may call more than once (Redis retries when another writer got there
 * first), so it must not have side effects.
 */
export interface DeploymentFilter {
  readonly nameContains?: string;
  readonly statuses?: readonly DeploymentStatus[];
  readonly deploymentTypes?: readonly DeploymentType[];
  readonly ids?: readonly string[];
}

export interface Page {
  readonly limit: number;
  readonly offset: number;
}

export interface DeploymentChange {
  readonly deployment: StoredDeployment;
  /** A revision created (or replaced, e.g. marked DEPLOYED) with this change, stored atomically with it. */
  readonly revision?: StoredRevision;
}

export interface ControlPlaneStore {
  readonly kind: 'memory' | 'redis';
  readonly region: Region;
  /**
   * Stores a new deployment and its first revision together, unless its tenant already has `maxPerTenant`
   * deployments in this region: then nothing is stored and the answer is false. The count and the write are one
   * atomic step, so concurrent creates (from any instance) never take a tenant past the limit.
   */
  createDeployment(deployment: StoredDeployment, first: StoredRevision, maxPerTenant?: number): Promise<boolean>;
  /** The deployment if it exists, is of this region and of `tenantId`; else null. */
  getDeployment(tenantId: string, id: string): Promise<StoredDeployment | null>;
  /** A tenant's deployments, newest first, filtered, then paged. */
  listDeployments(tenantId: string, filter: DeploymentFilter, page: Page): Promise<StoredDeployment[]>;
  /**
   * Applies `change` to the current record and stores the result (with the
   * revision it adds, if any). `change` returning null writes nothing.
   * Null when the deployment does not exist (for this tenant and region).
   */
  updateDeployment(
    tenantId: string,
    id: string,
    change: (current: StoredDeployment) => DeploymentChange | null,
  ): Promise<DeploymentChange | null>;
  /** Removes the deployment and all its revisions; returns what was removed, or null. */
  deleteDeployment(tenantId: string, id: string): Promise<StoredDeployment | null>;
  getRevision(deploymentId: string, revisionId: string): Promise<StoredRevision | null>;
  /** Newest first, optionally only these statuses, paged. */
  listRevisions(
    deploymentId: string,
    statuses: readonly RevisionStatus[] | undefined,
    page: Page,
  ): Promise<StoredRevision[]>;
  /** Like updateDeployment for one revision; null when it is gone or `change` declined. */
  updateRevision(
    deploymentId: string,
    revisionId: string,
    change: (current: StoredRevision) => StoredRevision | null,
  ): Promise<StoredRevision | null>;
  /** Every deployment of this region, of any tenant (serving them again at start; polling `build_on_push` branches). */
  allDeployments(): Promise<StoredDeployment[]>;
  /** Revisions of this region not yet in a final status (for recovery at start). */
  unfinishedRevisions(): Promise<StoredRevision[]>;
  close(): Promise<void>;
}

export function matchesFilter(d: StoredDeployment, f: DeploymentFilter): boolean {
  if (f.nameContains !== undefined && !d.name.toLowerCase().includes(f.nameContains.toLowerCase())) return false;
  if (f.statuses?.length && !f.statuses.includes(d.status)) return false;
  if (f.deploymentTypes?.length && !f.deploymentTypes.includes(d.source_config.deployment_type)) return false;
  if (f.ids?.length && !f.ids.includes(d.id)) return false;
  return true;
}

export const pageOf = <T>(items: readonly T[], page: Page): T[] => items.slice(page.offset, page.offset + page.limit);

/** Guards every write: a store never takes a record of another region (or tenant, or deployment) than the one named. */
export function checkOwnership(region: Region, record: { region: Region }, what: string): void {
  if (record.region !== region) throw new Error(`${what} of region ${record.region} given to the ${region} store`);
}
