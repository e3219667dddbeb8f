import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { buildKept, removeBuild } from './build-files.ts';
import type { BuildsOptions } from './builds-options.ts';
import { redeploy } from './redeploy.ts';
import { openRepoUrl } from './repo-url.ts';
import { RevisionRun } from './revision-run.ts';
import { canMove, isTerminal, moveRevision, supersededStatus } from '../revision-state.ts';
import type { RevisionStatus, StoredDeployment, StoredRevision } from '../types.ts';

export type { BuildsOptions } from './builds-options.ts';

/**
 * Runs revisions through their statuses in the background (one revision's
 * run: revision-run.ts; serving a kept build again: redeploy.ts). Here: the
 * queue of runs, superseding and forgetting a deployment's revisions, the
 * revisions a restart caught unfinished, and the build folders and artifacts (build-files.ts).
 */
export class Builds {
  private readonly runs: RevisionRun;

  constructor(private readonly o: BuildsOptions) {
    this.runs = new RevisionRun(
      o,
      (deploymentId, revisionId) => this.folderOf(deploymentId, revisionId),
      this.places(),
    );
  }

  folderOf(deploymentId: string, revisionId?: string): string {
    const dir = join(this.o.workDir, this.o.store.region, deploymentId);
    return revisionId === undefined ? dir : join(dir, revisionId);
  }

  /** Whether a revision's build is kept where its host runs it from (a redeploy then needs no rebuild). */
  hasBuild(rev: StoredRevision): Promise<boolean> {
    return this.o.serving ? this.o.serving.hasBuild(rev) : buildKept(this.places(), 'folder', rev);
  }

  /** Where the builds are: folders and artifacts (build-files.ts). */
  places() {
    return { folderOf: (d: string, r: string) => this.folderOf(d, r), artifacts: this.o.artifacts ?? null };
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
      await removeBuild(this.places(), done ?? r);
    }
  }

  /**
   * After a delete: stop the deployment's runs and its process, remove its route, data, work folders and the
   * artifacts (`artifacts`: its revisions', read before its records went: artifactsOf).
   */
  async forget(deploymentId: string, artifacts: readonly string[] = []): Promise<void> {
    const running = this.o.queue.runningIn(deploymentId);
    await this.o.queue.cancelGroup(deploymentId);
    if (running > 0) this.o.log.info({ deploymentId }, 'build interrupted by delete');
    await this.o.serving?.remove(deploymentId);
    await this.removeFiles(deploymentId, artifacts);
  }

  /** The sha256 of every artifact the deployment's revisions have (asked before its records are deleted). */
  async artifactsOf(deploymentId: string): Promise<string[]> {
    if (!this.o.artifacts) return [];
    const revisions = await this.o.store.listRevisions(deploymentId, undefined, { limit: 100, offset: 0 });
    return revisions.flatMap((r) => (r.artifact ? [r.artifact.sha256] : []));
  }

  /**
   * Every deployment's builds (a memory store's, at its stop: the deployments end with the process). Not the whole
   * BUILD_WORK_DIR or ARTIFACTS_DIR: another gateway on this host may use them too.
   */
  async removeAllFiles(): Promise<void> {
    for (const d of await this.o.store.allDeployments()) {
      if (d.bundled) continue;
      await this.removeFiles(d.id, await this.artifactsOf(d.id)).catch((err: unknown) =>
        this.o.log.warn({ err, deploymentId: d.id }, 'could not remove the build folders'),
      );
    }
  }

  /** Every build of the deployment: its work folders and the given artifacts. */
  async removeFiles(deploymentId: string, artifacts: readonly string[]): Promise<void> {
    await Promise.all(artifacts.map((sha256) => this.o.artifacts?.remove(sha256)));
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
        await removeBuild(this.places(), done);
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
