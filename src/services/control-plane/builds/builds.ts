import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Builder } from './builder.ts';
import type { BuildSandbox } from './build-sandbox.ts';
import type { BuildQueue } from './build-queue.ts';
import type { BuildLimits } from './step-bounds.ts';
import { redeploy } from './redeploy.ts';
import { openRepoUrl } from './repo-url.ts';
import { RevisionRun } from './revision-run.ts';
import { canMove, isTerminal, moveRevision, supersededStatus } from '../revision-state.ts';
import type { SecretBox } from '../store/secrets.ts';
import type { ControlPlaneStore } from '../store.ts';
import type { RevisionStatus, StoredDeployment, StoredRevision } from '../types.ts';
import type { Serving } from '../serving/serving.ts';

/**
 * Runs revisions through their statuses in the background (one revision's
 * run: revision-run.ts; serving a kept build again: redeploy.ts). Here: the
 * queue of runs, superseding and forgetting a deployment's revisions, the
 * revisions a restart caught unfinished, and the build folders.
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
  /** Whether builds run in this process (it holds the hosting lease); default always. */
  readonly runsHere?: () => boolean;
  /**
   * Runs the revisions (install, load check, route); null = records only: a git revision is DEPLOYED after its
   * checkout and config check, and nothing serves it.
   */
  readonly serving?: Serving | null;
  /** Budget of the dependency install. */
  readonly installTimeoutMs?: number;
  /** Build folders kept per deployment (the serving revision's included); default 1. */
  readonly keepBuilds?: number;
  /** Most bytes of an install's `node_modules` (NODE_MODULES_MAX_MB); default INSTALL_MAX_BYTES. */
  readonly nodeModulesMaxBytes?: number;
  /** Where npm runs (build-sandbox.ts); default no sandbox, every tenant trusted (tests of the bookkeeping). */
  readonly sandbox?: BuildSandbox;
  /** Bounds of the install step (step-bounds.ts); default none but its size and time. */
  readonly limits?: BuildLimits;
  /** The organisation of a workspace: its builds take turns with other organisations' and share its cgroup. */
  readonly orgOf?: (workspace: string) => Promise<string | null>;
}

export class Builds {
  private readonly runs: RevisionRun;

  constructor(private readonly o: BuildsOptions) {
    this.runs = new RevisionRun(o, (deploymentId, revisionId) => this.folderOf(deploymentId, revisionId));
  }

  folderOf(deploymentId: string, revisionId?: string): string {
    const dir = join(this.o.workDir, this.o.store.region, deploymentId);
    return revisionId === undefined ? dir : join(dir, revisionId);
  }

  /** Whether a revision's build folder is kept (a redeploy then needs no rebuild). */
  hasBuild(deploymentId: string, revisionId: string): boolean {
    return existsSync(this.folderOf(deploymentId, revisionId));
  }

  enqueue(revision: StoredRevision): void {
    // Not the hosting gateway: the revision stays QUEUED in the store and the one hosting builds it (pickUpQueued).
    if (this.o.runsHere?.() === false) return;
    const run = (signal: AbortSignal) => this.runs.run(revision, signal);
    this.o.queue.add(revision.id, revision.deployment_id, run, this.share(revision.tenant_id));
  }

  /**
   * Whose turn a build takes in the queue: its workspace's organisation (`org:`), so one organisation's many
   * workspaces hold no more slots than one; a workspace no organisation owns is its own.
   */
  private share(workspace: string): string | Promise<string> {
    if (!this.o.orgOf) return workspace;
    return this.o.orgOf(workspace).then(
      (org) => (org === null ? `workspace:${workspace}` : `org:${org}`),
      () => `workspace:${workspace}`,
    );
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

  /** On the hosting gateway, now and then: revisions another gateway on the store queued, queued here too. */
  async pickUpQueued(): Promise<number> {
    const queued = (await this.o.store.unfinishedRevisions())
      .filter((r) => r.status === 'QUEUED')
      .sort((a, b) => a.created_at.localeCompare(b.created_at));
    for (const r of queued) this.enqueue(r);
    return queued.length;
  }

  /**
   * Serves an older DEPLOYED revision again from its kept build (a redeploy): its process starts (the load check
   * again), then the route and the deployment's active revision move to it.
   */
  enqueueRedeploy(rev: StoredRevision): void {
    // Not the hosting gateway: the one hosting sees the deployment's latest revision is not the one it serves.
    if (this.o.runsHere?.() === false) return;
    const run = (signal: AbortSignal) => redeploy(this.o, rev, signal);
    this.o.queue.add(`${rev.id}:redeploy`, rev.deployment_id, run, this.share(rev.tenant_id));
  }

  /** The deployment's `repo_url` with its credentials (for `git ls-remote`). */
  async repoUrlOf(d: StoredDeployment): Promise<string | null> {
    return openRepoUrl(d, this.o.box);
  }
}
