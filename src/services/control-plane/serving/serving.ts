import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { RouteTable } from '../../../routing/route-table.ts';
import type { RunningRevision } from '../../revision-host/revision-host.ts';
import type { ArtifactStore } from '../builds/artifacts.ts';
import type { ControlPlaneStore } from '../store.ts';
import type { StoredDeployment, StoredRevision } from '../types.ts';
import { removeDeploymentData } from './deployment-data.ts';
import type { DeploymentRedisUsers } from './deployment-redis-users.ts';
import { launchRevision, type LaunchOptions } from './revision-launch.ts';
import { buildKept } from '../builds/build-files.ts';
import { processCrashed, processStarted } from '../../../metrics/control-plane-metrics.ts';
import { clearServingError, showServingError, showUnservable } from './serving-error.ts';
import { servedAgainRevision } from '../revision-state.ts';

/**
 * Which revision serves each deployment, and keeping it served: starts a
 * revision's process (the load check of a build, a redeploy, a restart:
 * revision-launch.ts), moves the deployment's route to it once it is ready
 * (the previous process drains, then stops), restarts a process that dies
 * with backoff (and says so on the deployment when it keeps dying:
 * serving-error.ts), and retires a deleted deployment (route, Redis user,
 * process, its Agent Server data: deployment-data.ts).
 */
export interface ServingOptions extends LaunchOptions {
  readonly routes: RouteTable;
  readonly store: ControlPlaneStore;
  readonly log: Logger;
  /** Where builds are packed (ARTIFACTS_DIR), for a host that runs revisions from their artifacts. */
  readonly artifacts?: ArtifactStore | null;
  readonly drainMs: number;
  /** Redis holding that data, to remove it on delete; null = in memory (it goes with the process). */
  readonly redis: Redis | null;
  /** The deployments' own Redis users, deleted with them; null = none made. */
  readonly redisUsers?: Pick<DeploymentRedisUsers, 'remove'> | null;
  /** How long a replaced revision keeps accepting after its route moved (default 2 s). */
  readonly routeSettleMs?: number;
  /** First restart delay after a crash; doubles up to 30 s. */
  readonly restartDelayMs?: number;
}

interface Served {
  readonly deploymentId: string;
  readonly tenantId: string;
  readonly revisionId: string;
  proc: RunningRevision | null;
  crashes: number;
  retired: boolean;
  timer?: NodeJS.Timeout;
}

/** Crashes in a row before the deployment shows it (`serving_error`). */
const SHOWN_AFTER_CRASHES = 3;
/** A process that lived this long was healthy: its crash count starts again. */
const HEALTHY_AFTER_MS = 30_000;
const MAX_RESTART_DELAY_MS = 30_000;
/** How long a replaced revision keeps accepting new connections after its route moved. */
const ROUTE_SETTLE_MS = 2000;

export class Serving {
  private readonly served = new Map<string, Served>();
  /** Replaced revisions still accepting while their route settles (retireLater). */
  private readonly settling = new Set<Served>();
  private closed = false;

  constructor(private readonly o: ServingOptions) {}

  /** The revision serving `deploymentId` now and its process, if any. */
  current(deploymentId: string): { revisionId: string; proc: RunningRevision | null } | undefined {
    const s = this.served.get(deploymentId);
    return s && { revisionId: s.revisionId, proc: s.proc };
  }

  /** Whether the revision's build is still there for its host (a redeploy or a restart needs no rebuild). */
  hasBuild(rev: StoredRevision): Promise<boolean> {
    return buildKept(this.o, this.o.host.runsFrom ?? 'folder', rev);
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
    this.supervise(next, proc);
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
   * Stops every process (no drain: the gateway is stopping). Each served deployment's route stays, marked as starting
   * (the next start serves it again: until then its url answers 503, not a dead port's 502).
   */
  async close(): Promise<void> {
    this.closed = true;
    // Only routes to this process's own processes: a route another gateway wrote since is its own affair.
    const own = [...this.served.values()].filter(
      (s) => s.proc && this.o.routes.get(s.deploymentId)?.target === s.proc.target,
    );
    await Promise.all(
      own.map((s) =>
        this.starting({ id: s.deploymentId, tenant_id: s.tenantId }, s.revisionId).catch((err: unknown) =>
          this.o.log.warn({ err, deploymentId: s.deploymentId }, 'could not mark the route as starting'),
        ),
      ),
    );
    const all = [...this.served.values(), ...this.settling];
    this.served.clear();
    this.settling.clear();
    await Promise.all(all.map((s) => this.retire(s, 0)));
    await this.o.host.close();
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

  private async route(s: Served, proc: RunningRevision): Promise<void> {
    await this.o.routes.set({
      deploymentId: s.deploymentId,
      revisionId: s.revisionId,
      tenantId: s.tenantId,
      target: proc.target,
    });
  }

  /** A process that ends without being asked is started again, after 0.5 s, 1 s, 2 s, ... up to 30 s. */
  private supervise(s: Served, proc: RunningRevision): void {
    const started = Date.now();
    void proc.exited.then((exit) => {
      if (exit.requested || s.retired || this.closed || this.served.get(s.deploymentId) !== s) return;
      s.proc = null;
      // Until it runs again its url answers 503 "starting", here at once even when the write to a shared table fails.
      this.starting({ id: s.deploymentId, tenant_id: s.tenantId }, s.revisionId).catch((err: unknown) =>
        this.o.log.warn({ err, deploymentId: s.deploymentId }, 'route marked starting here only: its write failed'),
      );
      if (Date.now() - started >= HEALTHY_AFTER_MS) s.crashes = 0;
      s.crashes++;
      processCrashed();
      this.crashed(s, exit.reason);
    });
  }

  private crashed(s: Served, reason: string): void {
    const delay = Math.min((this.o.restartDelayMs ?? 500) * 2 ** (s.crashes - 1), MAX_RESTART_DELAY_MS);
    const fields = { deploymentId: s.deploymentId, revisionId: s.revisionId, reason, crashes: s.crashes, delay };
    this.o.log.error(fields, 'revision process stopped unexpectedly; restarting');
    if (s.crashes >= SHOWN_AFTER_CRASHES) {
      void showServingError(
        this.o,
        { id: s.deploymentId, tenant_id: s.tenantId },
        `the process of revision ${s.revisionId} keeps stopping (${s.crashes} times in a row, last: ${reason}); next restart in ${Math.round(delay / 100) / 10} s`,
      );
    }
    s.timer = setTimeout(() => void this.restart(s), delay);
    s.timer.unref();
  }

  private async restart(s: Served): Promise<void> {
    if (s.retired || this.closed) return;
    try {
      const d = await this.o.store.getDeployment(s.tenantId, s.deploymentId);
      const rev = d && (await this.o.store.getRevision(s.deploymentId, s.revisionId));
      if (!d || !rev || s.retired) return;
      const proc = await this.launch(d, rev);
      if (s.retired || this.closed) return void (await proc.stop(0));
      s.proc = proc;
      await this.route(s, proc);
      this.supervise(s, proc);
      this.o.log.info(
        { deploymentId: s.deploymentId, revisionId: s.revisionId, target: proc.target },
        'revision restarted',
      );
      const healthy = setTimeout(() => {
        if (s.proc !== proc || s.retired) return;
        s.crashes = 0;
        void clearServingError(this.o, d);
      }, HEALTHY_AFTER_MS);
      healthy.unref();
    } catch (err) {
      s.crashes++;
      this.crashed(s, (err as Error).message);
    }
  }

  private async removeData(deploymentId: string): Promise<void> {
    if (this.o.redis) await removeDeploymentData(this.o.redis, this.o.dataPrefix, deploymentId, this.o.log);
  }
}
