import type { Region } from '../../../region.ts';
import { isTerminal } from '../revision-state.ts';
import {
  checkOwnership,
  matchesFilter,
  pageOf,
  type ControlPlaneStore,
  type DeploymentChange,
  type DeploymentFilter,
  type Page,
} from '../store.ts';
import type { RevisionStatus, StoredDeployment, StoredRevision } from '../types.ts';

/**
 * The store of one process. Records are kept as frozen copies so a caller
 * holding one cannot change the store behind its back. Single-threaded:
 * each read-modify-write is atomic by construction.
 */
export class MemoryControlPlaneStore implements ControlPlaneStore {
  readonly kind = 'memory';
  private readonly deployments = new Map<string, StoredDeployment>();
  /** Deployment id → its revisions by id. */
  private readonly revisions = new Map<string, Map<string, StoredRevision>>();

  constructor(readonly region: Region) {}

  async createDeployment(
    deployment: StoredDeployment,
    first: StoredRevision,
    maxPerTenant = Infinity,
  ): Promise<boolean> {
    checkOwnership(this.region, deployment, 'deployment');
    checkOwnership(this.region, first, 'revision');
    if (this.deployments.has(deployment.id)) throw new Error(`deployment ${deployment.id} exists`);
    // Counted and written with no await in between: atomic, as every write here.
    if (this.countOf(deployment.tenant_id) >= maxPerTenant) return false;
    this.deployments.set(deployment.id, freeze(deployment));
    this.revisions.set(deployment.id, new Map([[first.id, freeze(first)]]));
    return true;
  }

  async getDeployment(tenantId: string, id: string): Promise<StoredDeployment | null> {
    return this.deployment(tenantId, id);
  }

  async listDeployments(tenantId: string, filter: DeploymentFilter, page: Page): Promise<StoredDeployment[]> {
    const mine = [...this.deployments.values()].filter(
      (d) => d.tenant_id === tenantId && d.region === this.region && matchesFilter(d, filter),
    );
    return pageOf(mine.reverse(), page); // insertion order is creation order
  }

  async updateDeployment(
    tenantId: string,
    id: string,
    change: (current: StoredDeployment) => DeploymentChange | null,
  ): Promise<DeploymentChange | null> {
    // Read, change and write in one synchronous step: no other call can run in between.
    const current = this.deployment(tenantId, id);
    if (current === null) return null;
    const next = change(current);
    if (next === null) return { deployment: current };
    checkOwnership(this.region, next.deployment, 'deployment');
    this.deployments.set(id, freeze(next.deployment));
    if (next.revision) {
      checkOwnership(this.region, next.revision, 'revision');
      this.revisions.get(id)!.set(next.revision.id, freeze(next.revision));
    }
    return next;
  }

  async deleteDeployment(tenantId: string, id: string): Promise<StoredDeployment | null> {
    const current = this.deployment(tenantId, id);
    if (current === null) return null;
    this.deployments.delete(id);
    this.revisions.delete(id);
    return current;
  }

  async getRevision(deploymentId: string, revisionId: string): Promise<StoredRevision | null> {
    return this.revision(deploymentId, revisionId);
  }

  async listRevisions(
    deploymentId: string,
    statuses: readonly RevisionStatus[] | undefined,
    page: Page,
  ): Promise<StoredRevision[]> {
    const all = [...(this.revisions.get(deploymentId)?.values() ?? [])].filter(
      (r) => !statuses?.length || statuses.includes(r.status),
    );
    return pageOf(
      all.sort((a, b) => b.seq - a.seq),
      page,
    );
  }

  async updateRevision(
    deploymentId: string,
    revisionId: string,
    change: (current: StoredRevision) => StoredRevision | null,
  ): Promise<StoredRevision | null> {
    const current = this.revision(deploymentId, revisionId);
    if (current === null) return null;
    const next = change(current);
    if (next === null) return null;
    checkOwnership(this.region, next, 'revision');
    this.revisions.get(deploymentId)!.set(revisionId, freeze(next));
    return next;
  }

  async allDeployments(): Promise<StoredDeployment[]> {
    return [...this.deployments.values()].filter((d) => d.region === this.region);
  }

  async unfinishedRevisions(): Promise<StoredRevision[]> {
    return [...this.revisions.values()]
      .flatMap((m) => [...m.values()])
      .filter((r) => r.region === this.region && !isTerminal(r.status));
  }

  async close(): Promise<void> {}

  private countOf(tenantId: string): number {
    let n = 0;
    for (const d of this.deployments.values()) if (d.tenant_id === tenantId && d.region === this.region) n++;
    return n;
  }

  private deployment(tenantId: string, id: string): StoredDeployment | null {
    const d = this.deployments.get(id);
    return d !== undefined && d.tenant_id === tenantId && d.region === this.region ? d : null;
  }

  private revision(deploymentId: string, revisionId: string): StoredRevision | null {
    const r = this.revisions.get(deploymentId)?.get(revisionId);
    return r !== undefined && r.region === this.region ? r : null;
  }
}

function freeze<T>(value: T): T {
  return Object.freeze(structuredClone(value));
}
