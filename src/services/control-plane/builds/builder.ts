import { mkdir, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { NetworkPlan } from '../../revision-host/local/sandbox/network.ts';
import type { SandboxMode } from '../../revision-host/local/sandbox/probe.ts';
import { gitNetwork } from './step-network.ts';
import { readAppConfig, BuildFailure } from './app-config.ts';
import { folderBytes, mib } from './folder-size.ts';
import { git, GitError, redactCredentials, type GitOptions } from './git.ts';
import type { RepoHostPolicy } from './repo-hosts.ts';
import type { BuildLimits } from './step-bounds.ts';
import { isGitSource, type Source } from '../types.ts';

/**
 * Builds one revision: for a git source, check `repo_ref` out of `repo_url`
 * into the revision's work folder, record the commit, and validate the app
 * config; for an image source, nothing to fetch. Throws BuildFailure with a
 * reason a user can act on, or GitError('aborted') when cancelled.
 */
export interface BuildRequest {
  readonly source: Source;
  readonly repoUrl: string | null;
  readonly repoRef: string | null;
  readonly configPath: string;
  readonly imageUri: string | null;
  /** Created by the build; removed again when it fails. */
  readonly workFolder: string;
  /** The organisation of the deployment's workspace: its build steps run in its cgroup (step-bounds.ts). */
  readonly org?: string | null;
  /** Runs one step of the build (`clone`, `config`) so the build log shows it with its time (build-progress.ts). */
  readonly step?: <T>(name: string, work: () => Promise<T>) => Promise<T>;
}

export interface BuildResult {
  readonly commitSha: string | null;
  readonly graphs: Readonly<Record<string, string>> | null;
  readonly authPath: string | null;
  /** The app's environment, read once here (app-env.ts); null for an image source. */
  readonly env?: Readonly<Record<string, string>> | null;
}

export interface Builder {
  build(request: BuildRequest, signal: AbortSignal): Promise<BuildResult>;
  /** The commit a branch or tag names now (`git ls-remote`), for `build_on_push`; null when it names none. */
  remoteCommit?(repoUrl: string, ref: string, signal?: AbortSignal): Promise<string | null>;
}

const SHA = /^[0-9a-f]{7,40}$/i;

export interface GitBuilderOptions {
  readonly gitTimeoutMs: number;
  /** Whether `repo_url` may be a path on this host (or a `file://` URL). Default: true. */
  readonly localRepos?: boolean;
  /** Where a network `repo_url` may point, checked (DNS resolved again) right before the clone. Default: anywhere. */
  readonly repoHosts?: RepoHostPolicy;
  /** Most bytes a checkout (its .git included) may take (CHECKOUT_MAX_MB); default CHECKOUT_MAX_BYTES. */
  readonly maxCheckoutBytes?: number;
  /** `bwrap`: every git command runs in the sandbox (git.ts), writing only the revision's folder. Default `off`. */
  readonly sandbox?: SandboxMode;
  /** The sandbox's network (a namespace of its own, or the host's): each git step's is made from it (step-network.ts). */
  readonly network?: NetworkPlan;
  /** Bounds of the clone (memory, pids, CPU: step-bounds.ts); default none but the checkout's size. */
  readonly limits?: BuildLimits;
}

/**
 * A 51 KiB pack can check out as 200 MiB: the checkout is measured while git writes it (every 200 ms: past the bound,
 * git is killed, so what it can write in that time is the slack) and once more before anything reads it. Not
 * RLIMIT_FSIZE: git cleans its checkout up when a write is refused, and the reason would be lost with it.
 */
export const CHECKOUT_MAX_BYTES = 1024 * 1024 * 1024;

export class GitBuilder implements Builder {
  constructor(private readonly options: GitBuilderOptions) {}

  async build(req: BuildRequest, signal: AbortSignal): Promise<BuildResult> {
    if (!isGitSource(req.source)) {
      if (!req.imageUri) throw new BuildFailure('source_revision_config.image_uri: required for an image source');
      return { commitSha: null, graphs: null, authPath: null };
    }
    if (!req.repoUrl) throw new BuildFailure('source_config.repo_url: required for a git source');
    if (!req.repoRef) throw new BuildFailure('source_revision_config.repo_ref: required for a git source');
    if (req.repoRef.startsWith('-') || req.repoUrl.startsWith('-'))
      throw new BuildFailure('repo_url and repo_ref must not start with "-"');
    if (this.options.localRepos === false && isLocal(req.repoUrl)) {
      throw new BuildFailure(
        'repo_url: repositories on this host are not allowed here (LOCAL_REPOS=deny, the default with NODE_ENV=production)',
      );
    }
    const admitted = (await this.options.repoHosts?.admit(req.repoUrl)) ?? { refused: null, pin: null };
    if (admitted.refused !== null) throw new BuildFailure(admitted.refused);
    const step = req.step ?? ((_name, work) => work());
    const { repoUrl, repoRef, workFolder } = req;
    const max = this.options.maxCheckoutBytes ?? CHECKOUT_MAX_BYTES;
    const tooBig = `repo_url: the checkout of ${repoRef} is over its limit of ${mib(max)}`;
    try {
      const commitSha = await step('clone', async () => {
        const limits = this.options.limits?.step(req.org ?? null, 'git');
        // The checkout's size is a bound of the clone like its memory: past it, git is killed mid-write. No one file
        // may outgrow it at all (RLIMIT_FSIZE): what a look every 200 ms lets through grows with the machine's load.
        const bound = {
          wrap: (argv: readonly string[]) => ['prlimit', `--fsize=${max}`, '--', ...(limits?.wrap(argv) ?? argv)],
          over: async () => limits?.over() ?? ((await folderBytes(workFolder, max)) > max ? tooBig : null),
          kill: () => limits?.kill(),
        };
        try {
          const sha = await this.checkout(repoUrl, repoRef, workFolder, signal, admitted.pin, bound);
          if ((await folderBytes(workFolder, max)) > max) throw new BuildFailure(tooBig);
          return sha;
        } catch (err) {
          // Killed for its size mid-clone (or a file stopped at its bound): the size is the whole reason, as when it
          // is found after.
          if (err instanceof BuildFailure && err.message.endsWith(tooBig)) throw new BuildFailure(tooBig);
          if ((await folderBytes(workFolder, max).catch(() => 0)) >= max) throw new BuildFailure(tooBig);
          throw err;
        } finally {
          limits?.release();
        }
      });
      const config = await step('config', () => readAppConfig(workFolder, req.configPath, repoRef));
      return { commitSha, graphs: config.graphs, authPath: config.authPath, env: config.env };
    } catch (err) {
      await rm(req.workFolder, { recursive: true, force: true });
      throw err;
    }
  }

  async remoteCommit(repoUrl: string, ref: string, signal?: AbortSignal): Promise<string | null> {
    if (repoUrl.startsWith('-') || ref.startsWith('-')) return null;
    if (this.options.localRepos === false && isLocal(repoUrl)) return null;
    const admitted = (await this.options.repoHosts?.admit(repoUrl)) ?? { refused: null, pin: null };
    if (admitted.refused !== null) return null;
    const out = await git(['ls-remote', '--', repoUrl, ref], {
      ...(await this.gitOptions(repoUrl, admitted.pin)),
      signal,
    });
    const lines = out.split('\n').map((l) => l.split('\t'));
    const named = (full: string) => lines.find(([, name]) => name === full)?.[0];
    return named(`refs/heads/${ref}`) ?? named(`refs/tags/${ref}^{}`) ?? named(`refs/tags/${ref}`) ?? null;
  }

  /**
   * Clones `ref` of `url` into `folder` (replacing what is there) and answers
   * the commit checked out. A branch or tag is one shallow clone; when the
   * remote has no such name and `ref` looks like a commit, the full history
   * is cloned and the commit checked out.
   */
  private async checkout(
    url: string,
    ref: string,
    folder: string,
    signal: AbortSignal,
    pin: string | null,
    bound: GitOptions['bound'],
  ): Promise<string> {
    const shown = redactCredentials(url);
    // The clone's target exists beforehand (empty): the sandbox binds it, and it is all git may write.
    const opts = { ...(await this.gitOptions(url, pin)), signal, writable: folder, bound };
    const fresh = async () => {
      await rm(folder, { recursive: true, force: true });
      await mkdir(folder, { recursive: true });
    };
    await fresh();
    // No template: a build needs no sample hooks, and copying them is most of a local clone's time.
    const clone = ['clone', '--quiet', '--template=', '--no-tags'];
    try {
      await git([...clone, '--depth', '1', '--branch', ref, '--', url, folder], opts);
    } catch (err) {
      if (!(err instanceof GitError) || err.kind !== 'failed' || !/remote branch .* not found/i.test(err.message)) {
        throw this.failure(err, (m) => `repo_url: cannot read repository ${shown}: ${m}`);
      }
      if (!SHA.test(ref)) throw new BuildFailure(`repo_ref: "${ref}" is not a branch, tag or commit of ${shown}`);
      await fresh();
      await this.run(
        git([...clone, '--no-checkout', '--', url, folder], opts),
        (m) => `repo_url: cannot clone ${shown}: ${m}`,
      );
      await this.run(
        git(['checkout', '--quiet', '--detach', ref], { ...opts, cwd: folder }),
        () => `repo_ref: commit ${ref} not found in ${shown}`,
      );
    }
    return (
      await this.run(
        git(['rev-parse', 'HEAD'], { ...opts, cwd: folder }),
        (m) => `cannot read the commit checked out: ${m}`,
      )
    ).trim();
  }

  /** What every git command of a build gets: its budget, the transports and address allowed, and the sandbox. */
  private async gitOptions(url: string, pin: string | null) {
    const localRepos = this.options.localRepos ?? true;
    const local = localRepos ? localPath(url) : null;
    const network = this.options.network ?? { mode: 'host', allow: [] };
    return {
      network: await gitNetwork(network, url, local !== null, pin),
      timeoutMs: this.options.gitTimeoutMs,
      localRepos,
      pin,
      sandbox: this.options.sandbox === 'bwrap',
      readOnly: local === null ? [] : [local],
    };
  }

  /** Git failures as BuildFailure with `reason(git's message)`; a cancellation stays a GitError('aborted'). */
  private async run(step: Promise<string>, reason: (message: string) => string): Promise<string> {
    try {
      return await step;
    } catch (err) {
      throw this.failure(err, reason);
    }
  }

  private failure(err: unknown, reason: (message: string) => string): unknown {
    if (err instanceof GitError && err.kind === 'over') return new BuildFailure(err.message);
    return err instanceof GitError && err.kind !== 'aborted' ? new BuildFailure(reason(err.message)) : err;
  }
}

/** The folder a local `repo_url` names (read in the sandbox), or null for a network one. */
function localPath(url: string): string | null {
  if (url.startsWith('/')) return url;
  try {
    return /^file:/i.test(url) ? fileURLToPath(url) : null;
  } catch {
    return null;
  }
}

/** A path on this host or a `file://` URL (the other forms schemas.ts accepts are network transports). */
function isLocal(url: string): boolean {
  return url.startsWith('/') || /^file:/i.test(url);
}

export { BuildFailure };
