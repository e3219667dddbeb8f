import type { RouteTable, RouteUnavailable } from './route-table.ts';
import { createUpstream, type Upstream } from '../proxy/forward.ts';

export interface DeploymentUpstreamsOptions {
  /** Most sockets to one deployment's process (as for the other upstreams: one per request in flight). */
  readonly connections: number;
  /** How often upstreams whose route changed or went are retired when no request asked for them (ms). */
  readonly sweepMs?: number;
}

/** The upstream name of every deployment in metrics (bounded: never the id); errors name the deployment. */
export const DEPLOYMENT_UPSTREAM = 'deployment';

/**
 * One connection pool per deployment target, made on the first request that needs it. When a deployment's route
 * changes (a rollover) or goes, its pool is retired: new requests get the new target's pool at once, while
 * `pool.close()` lets the requests and streams already on the old one finish there. That is what makes a rollover
 * cost no request: nothing in flight is cut by the edge.
 */
export class DeploymentUpstreams {
  private readonly live = new Map<string, { readonly target: string; readonly upstream: Upstream }>();
  private readonly retiring = new Set<Upstream>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly table: RouteTable,
    private readonly options: DeploymentUpstreamsOptions,
  ) {
    this.timer = setInterval(() => this.sweep(), options.sweepMs ?? 1000);
    this.timer.unref();
  }

  /** The upstream of the deployment's current route, or null when it has none or it is unavailable (see `down`). */
  get(deploymentId: string): Upstream | null {
    const route = this.table.get(deploymentId);
    const held = this.live.get(deploymentId);
    if (route === undefined || route.unavailable !== undefined) {
      if (held) this.retire(deploymentId);
      return null;
    }
    if (held?.target === route.target) return held.upstream;
    if (held) this.retire(deploymentId);
    const upstream = createUpstream(DEPLOYMENT_UPSTREAM, route.target, this.options.connections, {
      display: `deployment ${deploymentId}`,
    });
    this.live.set(deploymentId, { target: route.target, upstream });
    return upstream;
  }

  /** Why a deployment that exists has no process serving it now (its route says so), or undefined. */
  down(deploymentId: string): RouteUnavailable | undefined {
    return this.table.get(deploymentId)?.unavailable;
  }

  /** Pools open now (current and draining), for tests and metrics. */
  get size(): { readonly live: number; readonly retiring: number } {
    return { live: this.live.size, retiring: this.retiring.size };
  }

  /** Retires the pools of routes that changed or went, though no request asked for them since. */
  sweep(): void {
    for (const [id, held] of this.live) {
      const route = this.table.get(id);
      if (route?.target !== held.target || route.unavailable !== undefined) this.retire(id);
    }
  }

  /** After the edge has drained: every pool closed, those still busy cut. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    const pools = [...[...this.live.values()].map((h) => h.upstream), ...this.retiring];
    this.live.clear();
    this.retiring.clear();
    await Promise.all(pools.map((u) => u.pool.destroy().catch(() => {})));
  }

  private retire(deploymentId: string): void {
    const held = this.live.get(deploymentId)!;
    this.live.delete(deploymentId);
    this.retiring.add(held.upstream);
    // Resolves once the requests already dispatched to it (streams included) have ended.
    void held.upstream.pool
      .close()
      .catch(() => {})
      .finally(() => this.retiring.delete(held.upstream));
  }
}
