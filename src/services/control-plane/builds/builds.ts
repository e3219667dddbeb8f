import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { BuildFailure, type Builder } from './builder.ts';
import type { BuildQueue } from './build-queue.ts';
import { openRepoUrl } from './repo-url.ts';
import { canMove, isTerminal, moveRevision, supersededStatus } from '../revision-state.ts';
import type { SecretBox } from '../store/secrets.ts';
import type { ControlPlaneStore } from '../store.ts';
import type { RevisionStatus, StoredDeployment, StoredRevision } from '../types.ts';
import { RevisionLoadError, type RunningRevision } from '../../revision-host/revision-host.ts';
import { InstallCancelled, InstallFailure, installDependencies } from './install.ts';
import type { Serving } from '../serving/serving.ts';

/**
 * Runs revisions through their statuses in the background:
 * QUEUED → AWAITING_BUILD → BUILDING (the build) → AWAITING_DEPLOY →
 * DEPLOYING → DEPLOYED, waiting `stepDelayMs` before each move. Every move
 * is conditional on the status the run expects, so a revision that someone
 * else settled (superseded, deleted, interrupted by a restart) stops its run
 * instead of being overwritten.
 */
export interface BuildsOptions {
  readonly store: ControlPlaneStore;
  readonly builder: Builder;
  readonly queue: BuildQueue;
  readonly stepDelayMs: number;
  /** Work folders live under `<workDir>/<region>/<deployment>/<revision>`. */
  readonly workDir: string;
  readonly now: () => Date;
  readonly log: Logger;
  /** Opens a `repo_url` sealed because it carries credentials (repo-url.ts). */
  readonly box?: SecretBox;
  /**
   * Runs the revisions (install, load check, route); null = records only: a git revision is DEPLOYED after its
   * checkout and config check, and nothing serves it.
   */
  readonly serving?: Serving | null;
  /** Budget of the dependency install. */
  readonly installTimeoutMs?: number;
  /** Build folders kept per deployment (the serving revision's included); default 1. */
  readonly keepBuilds?: number;
}

/** The deployment once `rev` serves it. */
function servingRevision(d: StoredDeployment, rev: StoredRevision, at: Date): StoredDeployment {
  const cfg = rev.source_revision_config;
  return {
    ...d,
    active_revision_id: rev.id,
    status: 'READY',
    image_version: cfg.image_uri ?? cfg.repo_commit_sha?.slice(0, 12) ?? null,
    updated_at: at.toISOString(),
  };
}

/** The revision moved on without this run (superseded or deleted): stop quietly. */
class Settled extends Error {}

export class Builds {
  constructor(private readonly o: BuildsOptions) {}

  folderOf(deploymentId: string, revisionId?: string): string {
    const dir = join(this.o.workDir, this.o.store.region, deploymentId);
    return revisionId === undefined ? dir : join(dir, revisionId);
  }

  /** Whether a revision's build folder is kept (a redeploy then needs no rebuild). */
  hasBuild(deploymentId: string, revisionId: string): boolean {
    return existsSync(this.folderOf(deploymentId, revisionId));
  }

  enqueue(revision: StoredRevision): void {
    this.o.queue.add(revision.id, revision.deployment_id, (signal) => this.run(revision, signal));
  }

  /** Every unfinished revision of the deployment but `keep` becomes SKIPPED or INTERRUPTED; their runs stop. */
  async supersede(deploymentId: string, keep: string): Promise<void> {
    const revisions = await this.o.store.listRevisions(deploymentId, undefined, { limit: 100, offset: 0 });
    for (const r of revisions.filter((x) => x.id !== keep && !isTerminal(x.status))) {
      await this.o.queue.cancel(r.id);
      const done = await this.o.store.updateRevision(deploymentId, r.id, (cur) => {
        if (isTerminal(cur.status)) return null;
        const to = supersededStatus(cur.status);
        return moveRevision(cur, to, this.o.now(), `${to}: superseded by revision ${keep}`);
      });
      if (done)
        this.o.log.info(
          { deploymentId, revisionId: r.id, status: done.status, supersededBy: keep },
          'revision superseded',
        );
      await rm(this.folderOf(deploymentId, r.id), { recursive: true, force: true });
    }
  }

  /** After a delete: stop the deployment's runs and its process, remove its route, data and work folders. */
  async forget(deploymentId: string): Promise<void> {
    const running = this.o.queue.runningIn(deploymentId);
    await this.o.queue.cancelGroup(deploymentId);
    if (running > 0) this.o.log.info({ deploymentId }, 'build interrupted by delete');
    await this.o.serving?.remove(deploymentId);
    await rm(this.folderOf(deploymentId), { recursive: true, force: true });
  }

  /**
   * At start: queued revisions are queued again; any revision caught between
   * AWAITING_BUILD and DEPLOYING by a restart becomes INTERRUPTED (its work
   * folder is gone with the process that had it).
   */
  async recover(): Promise<{ requeued: number; interrupted: number }> {
    const unfinished = (await this.o.store.unfinishedRevisions()).sort((a, b) =>
      a.created_at.localeCompare(b.created_at),
    );
    let requeued = 0;
    let interrupted = 0;
    for (const r of unfinished) {
      if (r.status === 'QUEUED') {
        this.enqueue(r);
        requeued++;
        continue;
      }
      const done = await this.o.store.updateRevision(r.deployment_id, r.id, (cur) => {
        if (isTerminal(cur.status) || cur.status === 'QUEUED') return null;
        const to: RevisionStatus = canMove(cur.status, 'INTERRUPTED') ? 'INTERRUPTED' : 'CREATE_FAILED';
        const why = `${to}: the control plane restarted while the revision was ${cur.status}; patch the deployment with a repo_ref (or image_uri) to build again`;
        return moveRevision(cur, to, this.o.now(), why);
      });
      if (done) {
        interrupted++;
        this.o.log.warn(
          { deploymentId: r.deployment_id, revisionId: r.id, was: r.status },
          'revision interrupted by a restart',
        );
        await rm(this.folderOf(r.deployment_id, r.id), { recursive: true, force: true });
      }
    }
    return { requeued, interrupted };
  }

  private async run(queued: StoredRevision, signal: AbortSignal): Promise<void> {
    const { deployment_id: deploymentId, id: revisionId } = queued;
    const log = this.o.log.child({ deploymentId, revisionId });
    const move = async (from: RevisionStatus, to: RevisionStatus, message: string | null = null, changes = {}) => {
      const moved = await this.o.store.updateRevision(deploymentId, revisionId, (cur) =>
        cur.status === from ? moveRevision(cur, to, this.o.now(), message, changes) : null,
      );
      if (moved === null) throw new Settled();
      log.info({ status: to }, 'revision status');
      return moved;
    };
    let proc: RunningRevision | null = null;
    try {
      await this.pause(signal);
      let rev = await move('QUEUED', 'AWAITING_BUILD');
      await this.pause(signal);
      rev = await move('AWAITING_BUILD', 'BUILDING');
      const cfg = rev.source_revision_config;
      let result;
      try {
        result = await this.o.builder.build(
          {
            source: rev.source,
            repoUrl: await this.repoUrl(rev),
            repoRef: cfg.repo_ref,
            configPath: cfg.langgraph_config_path ?? 'langgraph.json',
            imageUri: cfg.image_uri,
            workFolder: this.folderOf(deploymentId, revisionId),
          },
          signal,
        );
      } catch (err) {
        if (!(err instanceof BuildFailure) || signal.aborted) throw err;
        await move('BUILDING', 'BUILD_FAILED', `BUILD_FAILED: ${err.message}`);
        log.warn({ reason: err.message }, 'build failed');
        return;
      }
      const changes = {
        source_revision_config: { ...cfg, repo_commit_sha: result.commitSha },
        graphs: result.graphs,
        auth_path: result.authPath,
        build_log: null as string | null,
      };
      if (this.o.serving && result.graphs !== null) {
        const failed = async (reason: string, buildLog: string | null) => {
          await rm(this.folderOf(deploymentId, revisionId), { recursive: true, force: true });
          await move('BUILDING', 'BUILD_FAILED', `BUILD_FAILED: ${reason}`, { ...changes, build_log: buildLog });
          log.warn({ reason }, 'build failed');
        };
        const appDir = dirname(
          join(
            this.folderOf(deploymentId, revisionId),
            changes.source_revision_config.langgraph_config_path ?? 'langgraph.json',
          ),
        );
        try {
          changes.build_log = (
            await installDependencies(appDir, { timeoutMs: this.o.installTimeoutMs ?? 600_000, signal })
          ).log;
        } catch (err) {
          if (signal.aborted || err instanceof InstallCancelled) throw new Settled();
          if (!(err instanceof BuildFailure)) throw err;
          return await failed(err.message, err instanceof InstallFailure ? err.log : null);
        }
        const d = await this.o.store.getDeployment(rev.tenant_id, deploymentId);
        if (d === null) throw new Settled();
        try {
          proc = await this.o.serving.launch(d, { ...rev, ...changes }, signal);
        } catch (err) {
          if (signal.aborted) throw new Settled();
          if (!(err instanceof RevisionLoadError)) throw err;
          return await failed(err.message, changes.build_log);
        }
      }
      await this.pause(signal);
      await move('BUILDING', 'AWAITING_DEPLOY', null, changes);
      await this.pause(signal);
      const deploying = await move('AWAITING_DEPLOY', 'DEPLOYING');
      await this.pause(signal);
      const serving = proc;
      proc = null;
      await this.deploy(deploying, serving);
      log.info({ status: 'DEPLOYED' }, 'revision status');
    } catch (err) {
      if (err instanceof Settled || signal.aborted) return;
      log.error({ err }, 'revision run failed');
      await this.failInPhase(deploymentId, revisionId, err);
    } finally {
      // A process that passed the load check but never came to serve (superseded, deleted, failed).
      if (proc) await proc.stop(0);
    }
  }

  /**
   * DEPLOYING → DEPLOYED and the deployment serving it (READY, its active
   * revision) in one store write, unless a newer revision was created
   * meanwhile (the deployment's latest is no longer this one). With a
   * process, the route moves to it first and back when the write declines.
   * Then the build folders not kept go.
   */
  private async deploy(rev: StoredRevision, proc: RunningRevision | null): Promise<void> {
    const commit = async () => {
      let deployed = false;
      const done = await this.o.store.updateDeployment(rev.tenant_id, rev.deployment_id, (d) => {
        deployed = false;
        if (d.latest_revision_id !== rev.id) return null;
        deployed = true;
        const at = this.o.now();
        return { deployment: servingRevision(d, rev, at), revision: moveRevision(rev, 'DEPLOYED', at) };
      });
      return done !== null && deployed;
    };
    const ok =
      proc && this.o.serving ? await this.o.serving.promote(this.tenantOf(rev), rev.id, proc, commit) : await commit();
    if (!ok) throw new Settled();
    await this.prune(rev.deployment_id, rev.id);
  }

  /**
   * Serves an older DEPLOYED revision again from its kept build (a redeploy): its process starts (the load check
   * again), then the route and the deployment's active revision move to it.
   */
  enqueueRedeploy(rev: StoredRevision): void {
    const id = `${rev.id}:redeploy`;
    this.o.queue.add(id, rev.deployment_id, async (signal) => {
      const log = this.o.log.child({ deploymentId: rev.deployment_id, revisionId: rev.id });
      const commit = async () => {
        let done = false;
        await this.o.store.updateDeployment(rev.tenant_id, rev.deployment_id, (d) => {
          done = d.latest_revision_id === rev.id;
          return done ? { deployment: servingRevision(d, rev, this.o.now()) } : null;
        });
        return done;
      };
      let ok: boolean;
      if (this.o.serving && this.o.serving.current(rev.deployment_id)?.revisionId !== rev.id) {
        const d = await this.o.store.getDeployment(rev.tenant_id, rev.deployment_id);
        if (d === null) return;
        let proc: RunningRevision;
        try {
          proc = await this.o.serving.launch(d, rev, signal);
        } catch (err) {
          if (signal.aborted) return;
          log.warn({ reason: (err as Error).message }, 'redeploy failed');
          await this.o.store.updateDeployment(rev.tenant_id, rev.deployment_id, (cur) => ({
            deployment: { ...cur, serving_error: `redeploy of revision ${rev.id} failed: ${(err as Error).message}` },
          }));
          return;
        }
        if (signal.aborted) return void (await proc.stop(0));
        ok = await this.o.serving.promote(d, rev.id, proc, commit);
      } else ok = await commit();
      if (ok) log.info('revision redeployed');
    });
  }

  /** Keeps the build folders of the serving revision and of the latest other DEPLOYED ones (KEEP_BUILDS in all). */
  private async prune(deploymentId: string, serving: string): Promise<void> {
    const keep = new Set([serving]);
    const deployed = await this.o.store.listRevisions(deploymentId, ['DEPLOYED'], { limit: 100, offset: 0 });
    for (const r of deployed) if (keep.size < (this.o.keepBuilds ?? 1)) keep.add(r.id);
    const folders = await readdir(this.folderOf(deploymentId)).catch(() => [] as string[]);
    await Promise.all(
      folders
        .filter((f) => !keep.has(f))
        .map((f) => rm(this.folderOf(deploymentId, f), { recursive: true, force: true })),
    );
  }

  private tenantOf(rev: StoredRevision) {
    return { id: rev.deployment_id, tenant_id: rev.tenant_id };
  }

  /** An unexpected error fails the revision in the phase it reached (never left unfinished). */
  private async failInPhase(deploymentId: string, revisionId: string, err: unknown): Promise<void> {
    await this.o.store
      .updateRevision(deploymentId, revisionId, (cur) => {
        const to: RevisionStatus = ['QUEUED', 'CREATING'].includes(cur.status)
          ? 'CREATE_FAILED'
          : ['AWAITING_BUILD', 'BUILDING'].includes(cur.status)
            ? 'BUILD_FAILED'
            : 'DEPLOY_FAILED';
        if (!canMove(cur.status, to)) return null;
        return moveRevision(cur, to, this.o.now(), `${to}: internal error (${(err as Error)?.message ?? String(err)})`);
      })
      .catch((e: unknown) => this.o.log.error({ err: e, deploymentId, revisionId }, 'could not record the failure'));
  }

  /** The deployment's `repo_url` with its credentials (for `git ls-remote`). */
  async repoUrlOf(d: StoredDeployment): Promise<string | null> {
    return openRepoUrl(d, this.o.box);
  }

  private async repoUrl(rev: StoredRevision): Promise<string | null> {
    const d = await this.o.store.getDeployment(rev.tenant_id, rev.deployment_id);
    if (d === null) throw new Settled();
    return openRepoUrl(d, this.o.box);
  }

  private async pause(signal: AbortSignal): Promise<void> {
    if (this.o.stepDelayMs > 0) await sleep(this.o.stepDelayMs, undefined, { signal });
    else signal.throwIfAborted();
  }
}
