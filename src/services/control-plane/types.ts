import type { Region } from '../../region.ts';

/** The public values (LangSmith Deployment control plane v2). */
export const SOURCES = ['github', 'external_docker', 'internal_docker', 'internal_source'] as const;
export const DEPLOYMENT_TYPES = ['dev_free', 'dev', 'prod'] as const;
export const DEPLOYMENT_STATUSES = ['AWAITING_DATABASE', 'READY', 'UNUSED', 'AWAITING_DELETE', 'UNKNOWN'] as const;
export const REVISION_STATUSES = [
  'CREATING',
  'QUEUED',
  'AWAITING_BUILD',
  'BUILDING',
  'AWAITING_DEPLOY',
  'DEPLOYING',
  'CREATE_FAILED',
  'BUILD_FAILED',
  'DEPLOY_FAILED',
  'DEPLOYED',
  'SKIPPED',
  'INTERRUPTED',
  'UNKNOWN',
] as const;

export type Source = (typeof SOURCES)[number];
export type DeploymentType = (typeof DEPLOYMENT_TYPES)[number];
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];
export type RevisionStatus = (typeof REVISION_STATUSES)[number];

/** Sources built from a git repository; the others deploy an image. */
export const isGitSource = (source: Source): boolean => source === 'github' || source === 'internal_source';

export interface SourceConfig {
  readonly integration_id: string | null;
  readonly repo_url: string | null;
  readonly deployment_type: DeploymentType;
  readonly build_on_push: boolean;
  readonly custom_url: string | null;
  readonly resource_spec: Record<string, unknown> | null;
}

export interface SourceRevisionConfig {
  readonly repo_ref: string | null;
  readonly langgraph_config_path: string | null;
  readonly image_uri: string | null;
}

/** A secret as stored: the value only as AES-256-GCM ciphertext. */
export interface StoredSecret {
  readonly name: string;
  readonly ciphertext: string;
}

export interface StoredDeployment {
  readonly id: string;
  readonly name: string;
  readonly tenant_id: string;
  readonly region: Region;
  readonly source: Source;
  readonly source_config: SourceConfig;
  readonly source_revision_config: SourceRevisionConfig;
  readonly secrets: readonly StoredSecret[];
  /** `source_config.repo_url` with its credentials, sealed like a secret (repo-url.ts); absent or null without any. */
  readonly repo_url_sealed?: string | null;
  readonly created_at: string;
  readonly updated_at: string;
  readonly status: DeploymentStatus;
  readonly latest_revision_id: string;
  readonly active_revision_id: string | null;
  readonly image_version: string | null;
  /**
   * Why the active revision's process is not serving (it keeps stopping, its build folder is gone); absent while it
   * serves.
   */
  readonly serving_error?: string;
  /** Revisions ever created; the next one's `seq` (orders the revision list). */
  readonly revision_count: number;
  /** The default deployment, served by the gateway's own Agent Server (default-deployment.ts): never built or launched. */
  readonly bundled?: boolean;
}

export interface StatusChange {
  readonly status: RevisionStatus;
  readonly at: string;
  readonly message?: string;
}

export interface StoredRevision {
  readonly id: string;
  readonly deployment_id: string;
  readonly tenant_id: string;
  readonly region: Region;
  /** 1 for the first revision of a deployment, then 2, 3, ... */
  readonly seq: number;
  readonly created_at: string;
  readonly updated_at: string;
  readonly status: RevisionStatus;
  /** Why the revision failed or stopped (`BUILD_FAILED: ...`); null otherwise. */
  readonly status_message: string | null;
  readonly source: Source;
  readonly source_revision_config: SourceRevisionConfig & { readonly repo_commit_sha: string | null };
  /** Every status the revision went through, with its time. */
  readonly status_history: readonly StatusChange[];
  /** The app config's graphs (`name → <file>:<export>`) once built from source. */
  readonly graphs: Readonly<Record<string, string>> | null;
  /** The app config's `auth.path`, when it names one. */
  readonly auth_path: string | null;
  /**
   * The app's environment as its build read it (the config's `env`, or its `.env` file, bounded: app-env.ts): what
   * every start of the revision gets, never read from the build folder again. Absent on a revision built before it was
   * kept; never shown by the API.
   */
  readonly app_env?: Readonly<Record<string, string>> | null;
  /**
   * The build packed as an artifact (builds/artifacts.ts): its sha256 names it in ARTIFACTS_DIR, `bytes` its size.
   * What a revision host that does not share this machine's disk starts it from. Absent on a revision built before
   * artifacts were kept (or never built); never shown by the API (internal, like its folder).
   */
  readonly artifact?: { readonly sha256: string; readonly bytes: number } | null;
  /**
   * The build's log: each step's start and end with its time, and what the dependency install printed (`npm ci` /
   * `npm install`); its last BUILD_LOG_MAX characters when long. Written as the build runs (build-progress.ts) and
   * served by the build_log endpoint.
   */
  readonly build_log?: string | null;
  /** Characters dropped from the start of `build_log` (it keeps its end): where a follower of the log stands. */
  readonly build_log_offset?: number;
  /** The build's steps so far, in order. */
  readonly build_steps?: readonly BuildStep[];
}

/** One step of a build (`clone`, `config`, `install`, `artifact`, `load check`, `deploy`) as it runs. */
export interface BuildStep {
  readonly name: string;
  readonly status: 'running' | 'done' | 'failed';
  readonly started_at: string;
  /** Null while it runs. */
  readonly duration_ms: number | null;
  /** Why it failed. */
  readonly message?: string;
}
