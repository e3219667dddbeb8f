import type { DeploymentRoute, RouteTable } from './route-table.ts';

/** The table of one process (the embedded default: the edge and the control plane share it in memory). */
export class MemoryRouteTable implements RouteTable {
  private readonly routes = new Map<string, DeploymentRoute>();

  get(deploymentId: string): DeploymentRoute | undefined {
    return this.routes.get(deploymentId);
  }

  async set(route: DeploymentRoute): Promise<void> {
    // A copy of the route's own fields: what the caller does with its object afterwards changes nothing here.
    const { deploymentId, revisionId, tenantId, target } = route;
    this.routes.set(deploymentId, { deploymentId, revisionId, tenantId, target });
  }

  async delete(deploymentId: string): Promise<void> {
    this.routes.delete(deploymentId);
  }

  all(): readonly DeploymentRoute[] {
    return [...this.routes.values()];
  }

  async close(): Promise<void> {}
}
