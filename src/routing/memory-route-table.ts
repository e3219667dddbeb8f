import { storedRoute, type DeploymentRoute, type RouteTable } from './route-table.ts';

/** The table of one process (the embedded default: the edge and the control plane share it in memory). */
export class MemoryRouteTable implements RouteTable {
  private readonly routes = new Map<string, DeploymentRoute>();

  get(deploymentId: string): DeploymentRoute | undefined {
    return this.routes.get(deploymentId);
  }

  async set(route: DeploymentRoute): Promise<void> {
    this.routes.set(route.deploymentId, storedRoute(route));
  }

  async delete(deploymentId: string): Promise<void> {
    this.routes.delete(deploymentId);
  }

  all(): readonly DeploymentRoute[] {
    return [...this.routes.values()];
  }

  async close(): Promise<void> {}
}
