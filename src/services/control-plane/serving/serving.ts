import type { RunningRevision } from '../../revision-host/revision-host.ts';
import type { StoredDeployment, StoredRevision } from '../types.ts';
import { removeDeploymentData } from './deployment-data.ts';
import { CrashRestarts, type Served } from './crash-restarts.ts';
import type { ServingOptions } from './serving-options.ts';
import { launchRevision } from './revision-launch.ts';
import { buildKept } from '../builds/build-files.ts';
import { processStarted } from '../../../metrics/control-plane-metrics.ts';
import { clearServingError, showUnservable } from './serving-error.ts';
import { servedAgainRevision } from '../revision-state.ts';

/**
 * Which revision serves each deployment, and keeping it served: starts a
 * revision's process (the load check of a build, a redeploy, a restart:
 * revision-launch.ts), moves the deployment's route to it once it is ready
 * (the previous process drains, then stops), restarts a process that dies
 * (crash-restarts.ts), and retires a deleted deployment (route, Redis user,
 * process, its Agent Server data: deployment-data.ts).
 */
export type { ServingOptions } from './serving-options.ts';

/** How long a replaced revision keeps accepting new connections after its route moved. */
const ROUTE_SETTLE_MS = 2000;

export class Serving {
  private readonly served = new Map<string, Served>();
  /** Replaced revisions still accepting while their route settles (retireLater). */
  private readonly settling = new Set<Served>();
  private closed = false;
  private readonly restarts: CrashRestarts;

  constructor(readonly o: ServingOptions) {
    this.restarts = new CrashRestarts(this);
  }

  /** Whether `s` is still its deployment's served revision (and serving is open): crash-restarts.ts asks. */
  serves(s: Served): boolean {
    return !this.closed && this.served.get(s.deploymentId) === s;
  }

  /** The revision serving `deploymentId` now and its process, if any. */
  current(deploymentId: string): { revisionId: string; proc: RunningRevision | null } | undefined {
    const s = this.served.get(deploymentId);
    return s && { revisionId: s.revisionId, proc: s.proc };
  }

  /** Whether the revision's build is still there for its host (a redeploy or a restart needs no rebuild). */
  hasBuild(rev: StoredRevision): Promise<boolean> {
    return buildKept(this.o, this.o.host.runsFrom ?? 'folder', rev);
  }

  /** The deployments served here and their revisions (the hosting gateway checks them against the store). */
  servedNow(): { deploymentId: string; tenantId: string; revisionId: string }[] {
    return [...this.served.values()].map(({ deploymentId, tenantId, revisionId }) => ({
      deploymentId,
      tenantId,
      revisionId,
    }));
  }

  /** Starts the revision's process from its build folder; rejects with a RevisionLoadError when the app cannot load. */
  launch(d: StoredDeployment, rev: StoredRevision, signal?: AbortSignal): Promise<RunningRevision> {
    return launchRevision(this.o, d, rev, signal).then(processStarted);
  }

  /**
   * Routes the deployment to `proc` (ready), then runs `commit` (the store
   * write making the revision active). When `commit` declines or fails, the
   * route goes back and `proc` stops; otherwise the previous process drains
   * and stops. Answers whether the revision now serves.
   */
  async promote(
    d: Pick<StoredDeployment, 'id' | 'tenant_id'>,
    revisionId: string,
    proc: RunningRevision,
    commit: () => Promise<boolean>,
  ): Promise<boolean> {
    const previous = this.served.get(d.id);
    await this.o.routes.set({ deploymentId: d.id, revisionId, tenantId: d.tenant_id, target: proc.target });
    let committed = false;
    try {
      committed = await commit();
    } finally {
      if (!committed) {
        if (previous?.proc) await this.route(previous, previous.proc);
        else await this.o.routes.delete(d.id);
        await proc.stop(0);
      }
    }
    if (!committed) return false;
    const next: Served = { deploymentId: d.id, tenantId: d.tenant_id, revisionId, proc, crashes: 0, retired: false };
    this.served.set(d.id, next);
    this.restarts.supervise(next, proc);
    if (previous) this.retireLater(previous);
    await clearServingError(this.o, d);
    this.o.log.info({ deploymentId: d.id, revisionId, target: proc.target }, 'revision serving');
    return true;
  }

  /**
   * At start, before any is served again: every deployment to serve again answers 503 "starting" meanwhile, not a
   * 502 from the port its previous process had (a gateway that crashed left that route behind).
   */
  async starting(d: Pick<StoredDeployment, 'id' | 'tenant_id'>, revisionId: string): Promise<void> {
    await this.o.routes.set({
      deploymentId: d.id,
      revisionId,
      tenantId: d.tenant_id,
      target: '',
      unavailable: 'starting',
    });
  }

  /**
   * A deployment whose active revision was DEPLOYED (or could not be served at an earlier start: DEPLOY_FAILED),
   * served again from its kept build (at start). When it cannot be, the deployment, its revision and its url say so
   * (serving-error.ts, showUnservable).
   */
  async resume(d: StoredDeployment, rev: StoredRevision): Promise<boolean> {
    if (!(await this.hasBuild(rev))) {
      await showUnservable(
        this.o,
        d,
        rev,
        `the build of revision ${rev.id} is gone (BUILD_WORK_DIR was emptied): patch the deployment with a repo_ref to build again`,
      );
      return false;
    }
    let proc: RunningRevision;
    try {
      proc = await this.launch(d, rev);
    } catch (err) {
      await showUnservable(this.o, d, rev, `revision ${rev.id} could not start again: ${(err as Error).message}`);
      throw err;
    }
    if (this.closed) return (await proc.stop(0), false);
    // Still the deployment's active revision (not deleted or redeployed meanwhile): READY and DEPLOYED (again).
    const commit = async () => {
      let ok = false;
      await this.o.store.updateDeployment(d.tenant_id, d.id, (cur) => {
        ok = cur.active_revision_id === rev.id;
        if (!ok) return null;
        const again = servedAgainRevision(rev, new Date());
        return { deployment: { ...cur, status: 'READY' }, ...(again && { revision: again }) };
      });
      return ok;
    };
    return this.promote(d, rev.id, proc, commit);
  }

  /**
   * A deleted deployment: no route, no Redis user (its connections end with it), its process stopped at once, its
   * Agent Server data removed.
   */
  async remove(deploymentId: string): Promise<void> {
    await this.o.routes.delete(deploymentId);
    await this.o.redisUsers?.remove(deploymentId);
    const s = this.served.get(deploymentId);
    this.served.delete(deploymentId);
    const replaced = [...this.settling].filter((x) => x.deploymentId === deploymentId);
    for (const x of replaced) this.settling.delete(x);
    await Promise.all([s, ...replaced].map((x) => x && this.retire(x, 0)));
    await this.removeData(deploymentId);
  }

  /**
   * Stops serving here (the gateway is stopping): `standDown`, then the host closes. Nothing is launched after.
   */
  async close(): Promise<void> {
    this.closed = true;
    await this.standDown();
    await this.o.host.close();
  }

  /**
   * Stops every process, no drain (the gateway stops, or it lost the hosting lease: the next holder serves the
   * deployments again). Each route to one of them stays, marked as starting (until then its url answers 503, not a
   * dead socket's 502); a route another gateway wrote since is its own affair. A host whose revisions outlive the
   * gateway (pods of a cluster) keeps the serving ones and their routes for the next holder; the replaced ones still
   * go after their drain.
   */
  async standDown(): Promise<void> {
    const served = [...this.served.values()];
    const replaced = [...this.settling];
    this.served.clear();
    this.settling.clear();
    if (this.o.host.revisionsOutliveGateway) {
      for (const s of served) clearTimeout(s.timer);
      await Promise.all(replaced.map((s) => this.retire(s, this.o.drainMs)));
      return;
    }
    const own = served.filter((s) => s.proc && this.o.routes.get(s.deploymentId)?.target === s.proc.target);
    await Promise.all(
      own.map((s) =>
        this.starting({ id: s.deploymentId, tenant_id: s.tenantId }, s.revisionId).catch((err: unknown) =>
          this.o.log.warn({ err, deploymentId: s.deploymentId }, 'could not mark the route as starting'),
        ),
      ),
    );
    await Promise.all([...served, ...replaced].map((s) => this.retire(s, 0)));
  }

  /**
   * A replaced revision keeps accepting for ROUTE_SETTLE_MS after its route moved, then drains: an edge that learns
   * the move a moment late (the route table reaches every edge sharing it within a second) still finds it listening.
   */
  private retireLater(s: Served): void {
    s.retired = true;
    this.settling.add(s);
    s.timer = setTimeout(() => {
      this.settling.delete(s);
      void this.retire(s, this.o.drainMs);
    }, this.o.routeSettleMs ?? ROUTE_SETTLE_MS);
    s.timer.unref();
  }

  private async retire(s: Served, drainMs: number): Promise<void> {
    s.retired = true;
    clearTimeout(s.timer);
    if (!s.proc) return;
    const proc = s.proc;
    await proc.stop(drainMs);
    this.o.log.info({ deploymentId: s.deploymentId, revisionId: s.revisionId, drainMs }, 'revision process stopped');
  }

  async route(s: Served, proc: RunningRevision): Promise<void> {
    await this.o.routes.set({
      deploymentId: s.deploymentId,
      revisionId: s.revisionId,
      tenantId: s.tenantId,
      target: proc.target,
    });
  }

  private async removeData(deploymentId: string): Promise<void> {
    if (this.o.redis) await removeDeploymentData(this.o.redis, this.o.dataPrefix, deploymentId, this.o.log);
  }
}
