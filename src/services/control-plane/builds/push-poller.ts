import type { Logger } from 'pino';
import type { Builder } from './builder.ts';
import type { Builds } from './builds.ts';
import { isTerminal } from '../revision-state.ts';
import type { DeploymentService } from '../service.ts';
import type { ControlPlaneStore } from '../store.ts';
import { isGitSource, type StoredDeployment } from '../types.ts';

/**
 * `build_on_push`: every interval, the branch (or tag) of each such
 * deployment is read with `git ls-remote`; a commit other than the one its
 * latest revision built makes a new revision. A deployment whose latest
 * revision is still in progress waits for the next round; a commit that
 * failed to build is not retried until the branch moves again.
 */
export interface PushPollerOptions {
  readonly store: ControlPlaneStore;
  readonly builder: Builder;
  readonly builds: Pick<Builds, 'repoUrlOf'>;
  readonly service: Pick<DeploymentService, 'pushed'>;
  readonly intervalMs: number;
  readonly log: Logger;
}

export class PushPoller {
  /** The last commit seen (or built) per deployment. */
  private readonly seen = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<void> | null = null;
  private readonly abort = new AbortController();

  constructor(private readonly o: PushPollerOptions) {}

  start(): void {
    if (!this.o.builder.remoteCommit) return;
    clearInterval(this.timer);
    this.timer = setInterval(() => {
      this.round ??= this.poll().finally(() => (this.round = null));
    }, this.o.intervalMs);
    this.timer.unref();
  }

  /** No more rounds (this gateway stopped hosting); `start` polls again. */
  stop(): void {
    clearInterval(this.timer);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.abort.abort();
    await this.round;
  }

  /** One round over every build_on_push deployment. */
  async poll(): Promise<void> {
    let all: StoredDeployment[];
    try {
      all = await this.o.store.allDeployments();
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message }, 'build on push: cannot list deployments');
      return;
    }
    for (const d of all) {
      if (this.abort.signal.aborted) return;
      if (!d.source_config.build_on_push || !isGitSource(d.source) || !d.source_revision_config.repo_ref) continue;
      await this.check(d).catch((err: unknown) =>
        this.o.log.warn({ deploymentId: d.id, err: (err as Error).message }, 'build on push: cannot read the branch'),
      );
    }
  }

  private async check(d: StoredDeployment): Promise<void> {
    const latest = await this.o.store.getRevision(d.id, d.latest_revision_id);
    if (latest === null || !isTerminal(latest.status)) return;
    const url = await this.o.builds.repoUrlOf(d);
    if (url === null) return;
    const sha = await this.o.builder.remoteCommit!(url, d.source_revision_config.repo_ref!, this.abort.signal);
    if (sha === null) return;
    const built = latest.source_revision_config.repo_commit_sha;
    const seen = this.seen.get(d.id) ?? built;
    this.seen.set(d.id, sha);
    if (seen === null || seen === undefined || sha === seen || sha === built) return;
    await this.o.service.pushed(d, sha);
  }
}
