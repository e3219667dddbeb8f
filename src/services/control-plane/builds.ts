import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { BuildFailure, type Builder } from './builder.ts';
import type { BuildQueue } from './build-queue.ts';
import { openRepoUrl } from './repo-url.ts';
import { canMove, isTerminal, moveRevision, supersededStatus } from './revision-state.ts';
import type { SecretBox } from './secrets.ts';
import type { ControlPlaneStore } from './store.ts';
import type { RevisionStatus, StoredRevision } from './types.ts';

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
}

/** The revision moved on without this run (superseded or deleted): stop quietly. */
class Settled extends Error {}

export class Builds {
  constructor(private readonly o: BuildsOptions) {}

  folderOf(deploymentId: string, revisionId?: string): string {
    const dir = join(this.o.workDir, this.o.store.region, deploymentId);
    return revisionId === undefined ? dir : join(dir, revisionId);
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

  /** After a delete: stop the deployment's runs and remove its work folders. */
  async forget(deploymentId: string): Promise<void> {
    const running = this.o.queue.runningIn(deploymentId);
    await this.o.queue.cancelGroup(deploymentId);
    if (running > 0) this.o.log.info({ deploymentId }, 'build interrupted by delete');
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
      await this.pause(signal);
      const changes = {
        source_revision_config: { ...cfg, repo_commit_sha: result.commitSha },
        graphs: result.graphs,
        auth_path: result.authPath,
      };
      await move('BUILDING', 'AWAITING_DEPLOY', null, changes);
      await this.pause(signal);
      const deploying = await move('AWAITING_DEPLOY', 'DEPLOYING');
      await this.pause(signal);
      await this.deploy(deploying);
      log.info({ status: 'DEPLOYED' }, 'revision status');
    } catch (err) {
      if (err instanceof Settled || signal.aborted) return;
      log.error({ err }, 'revision run failed');
      await this.failInPhase(deploymentId, revisionId, err);
    }
  }

  /**
   * DEPLOYING → DEPLOYED and the deployment serving it (READY, its active
   * revision) in one store write, unless a newer revision was created
   * meanwhile (the deployment's latest is no longer this one). Then the
   * other revisions' work folders go.
   */
  private async deploy(rev: StoredRevision): Promise<void> {
    const cfg = rev.source_revision_config;
    let deployed = false;
    const done = await this.o.store.updateDeployment(rev.tenant_id, rev.deployment_id, (d) => {
      deployed = false;
      if (d.latest_revision_id !== rev.id) return null;
      const at = this.o.now();
      deployed = true;
      return {
        deployment: {
          ...d,
          active_revision_id: rev.id,
          status: 'READY',
          image_version: cfg.image_uri ?? cfg.repo_commit_sha?.slice(0, 12) ?? null,
          updated_at: at.toISOString(),
        },
        revision: moveRevision(rev, 'DEPLOYED', at),
      };
    });
    if (done === null || !deployed) throw new Settled();
    const folders = await readdir(this.folderOf(rev.deployment_id)).catch(() => [] as string[]);
    await Promise.all(
      folders
        .filter((f) => f !== rev.id)
        .map((f) => rm(this.folderOf(rev.deployment_id, f), { recursive: true, force: true })),
    );
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
