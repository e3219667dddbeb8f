import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BuildFailure } from './builder.ts';
import { BuildProgress } from './build-progress.ts';
import { openRepoUrl } from './repo-url.ts';
import { canMove, moveRevision } from '../revision-state.ts';
import type { RevisionStatus, StoredDeployment, StoredRevision } from '../types.ts';
import { RevisionLoadError, type RunningRevision } from '../../revision-host/revision-host.ts';
import { InstallCancelled, installDependencies } from './install.ts';
import type { BuildsOptions } from './builds-options.ts';
import { pruneBuilds, removeBuild, type BuildPlaces } from './build-files.ts';
import { revisionReached } from '../../../metrics/control-plane-metrics.ts';

/** The deployment once `rev` serves it. */
export function servingRevision(d: StoredDeployment, rev: StoredRevision, at: Date): StoredDeployment {
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

/**
 * One revision's run through its statuses: QUEUED → AWAITING_BUILD →
 * BUILDING (the build, and with serving the install and load check) →
 * AWAITING_DEPLOY → DEPLOYING → DEPLOYED, waiting `stepDelayMs` before each
 * move. Every move is conditional on the status the run expects, so a
 * revision that someone else settled (superseded, deleted, interrupted by a
 * restart) stops its run instead of being overwritten.
 */
export class RevisionRun {
  constructor(
    private readonly o: BuildsOptions,
    private readonly folderOf: (deploymentId: string, revisionId?: string) => string,
    private readonly places: BuildPlaces,
  ) {}

  async run(queued: StoredRevision, signal: AbortSignal): Promise<void> {
    const { deployment_id: deploymentId, id: revisionId } = queued;
    const log = this.o.log.child({ deploymentId, revisionId });
    const progress = new BuildProgress({ store: this.o.store, deploymentId, revisionId, now: this.o.now, log });
    // Every move carries the build log so far: the final status and the final log are one write.
    const move = async (from: RevisionStatus, to: RevisionStatus, message: string | null = null, changes = {}) => {
      const moved = await this.o.store.updateRevision(deploymentId, revisionId, (cur) =>
        cur.status === from ? moveRevision(cur, to, this.o.now(), message, { ...changes, ...progress.fields() }) : null,
      );
      if (moved === null) throw new Settled();
      log.info({ status: to }, 'revision status');
      revisionReached(moved);
      return moved;
    };
    let proc: RunningRevision | null = null;
    try {
      await this.pause(signal);
      let rev = await move('QUEUED', 'AWAITING_BUILD');
      await this.pause(signal);
      rev = await move('AWAITING_BUILD', 'BUILDING');
      const cfg = rev.source_revision_config;
      // Its steps run in the organisation's cgroup (step-bounds.ts): one tenant's builds share its CPUs.
      const org = (await this.o.orgOf?.(rev.tenant_id)) ?? null;
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
            org,
            step: (name, work) => progress.step(name, work),
          },
          signal,
        );
      } catch (err) {
        if (!(err instanceof BuildFailure) || signal.aborted) throw err;
        await move('BUILDING', 'BUILD_FAILED', `BUILD_FAILED: ${err.message}`);
        log.warn({ reason: err.message }, 'build failed');
        return;
      }
      const changes: Partial<StoredRevision> = {
        source_revision_config: { ...cfg, repo_commit_sha: result.commitSha },
        graphs: result.graphs,
        auth_path: result.authPath,
        app_env: result.env ?? null,
      };
      if (this.o.serving && result.graphs !== null) {
        const failed = async (reason: string) => {
          await removeBuild(this.places, { deployment_id: deploymentId, id: revisionId, artifact: changes.artifact });
          await move('BUILDING', 'BUILD_FAILED', `BUILD_FAILED: ${reason}`, changes);
          log.warn({ reason }, 'build failed');
        };
        const folder = this.folderOf(deploymentId, revisionId);
        const configPath = join(folder, cfg.langgraph_config_path ?? 'langgraph.json');
        const refusal = (await this.o.sandbox?.refusal(rev.tenant_id)) ?? null;
        if (refusal !== null) return await failed(refusal);
        try {
          await progress.step('install', async () => {
            const installed = await installDependencies(dirname(configPath), {
              timeoutMs: this.o.installTimeoutMs ?? 600_000,
              signal,
              maxBytes: this.o.nodeModulesMaxBytes,
              configFile: basename(configPath),
              sandbox: this.o.sandbox?.mode === 'bwrap',
              ...(this.o.sandbox && { network: this.o.sandbox.network }),
              writable: folder,
              onOutput: (text) => progress.append(text),
              limits: this.o.limits,
              org,
            });
            if (installed.log === null)
              progress.append('(no package.json next to the app config: nothing to install)\n');
          });
        } catch (err) {
          if (signal.aborted || err instanceof InstallCancelled) throw new Settled();
          if (!(err instanceof BuildFailure)) throw err;
          return await failed(err.message);
        }
        const artifacts = this.o.artifacts;
        if (artifacts) {
          try {
            const packed = await progress.step('artifact', () => artifacts.pack(folder));
            Object.assign(changes, { artifact: packed });
            progress.append(`artifact sha256:${packed.sha256} (${packed.bytes} bytes)\n`);
          } catch (err) {
            if (signal.aborted) throw new Settled();
            if (!(err instanceof BuildFailure)) throw err;
            return await failed(err.message);
          }
        }
        const d = await this.o.store.getDeployment(rev.tenant_id, deploymentId);
        if (d === null) throw new Settled();
        try {
          const serving = this.o.serving;
          proc = await progress.step('load check', () => serving.launch(d, { ...rev, ...changes }, signal));
        } catch (err) {
          if (signal.aborted) throw new Settled();
          if (!(err instanceof RevisionLoadError)) throw err;
          return await failed(err.message);
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
      revisionReached({ status: 'DEPLOYED', status_history: [] });
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
   * Keeps the builds (folders and artifacts) of the serving revision and of the latest other DEPLOYED ones
   * (KEEP_BUILDS in all).
   */
  private async prune(deploymentId: string, serving: string): Promise<void> {
    const keep = new Set([serving]);
    const deployed = await this.o.store.listRevisions(deploymentId, ['DEPLOYED'], { limit: 100, offset: 0 });
    for (const r of deployed) if (keep.size < (this.o.keepBuilds ?? 1)) keep.add(r.id);
    await pruneBuilds(this.places, this.o.store, deploymentId, this.folderOf(deploymentId), keep);
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
