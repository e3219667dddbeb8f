import type { Logger } from 'pino';
import type { ArtifactStore } from './artifacts.ts';
import type { Builder } from './builder.ts';
import type { BuildSandbox } from './build-sandbox.ts';
import type { BuildQueue } from './build-queue.ts';
import type { BuildLimits } from './step-bounds.ts';
import type { SecretBox } from '../store/secrets.ts';
import type { ControlPlaneStore } from '../store.ts';
import type { Serving } from '../serving/serving.ts';

/**
 * What the builds are given (builds.ts, and the runs it starts: revision-run.ts, redeploy.ts). A module of its own so
 * those import it without importing each other.
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
  /**
   * Where builds are packed as artifacts (artifacts.ts), after the install and before the load check; null or absent
   * = none is made (records only).
   */
  readonly artifacts?: ArtifactStore | null;
  /** Where npm runs (build-sandbox.ts); default no sandbox, every tenant trusted (tests of the bookkeeping). */
  readonly sandbox?: BuildSandbox;
  /** Bounds of the install step (step-bounds.ts); default none but its size and time. */
  readonly limits?: BuildLimits;
  /** The organisation of a workspace: its builds take turns with other organisations' and share its cgroup. */
  readonly orgOf?: (workspace: string) => Promise<string | null>;
}
