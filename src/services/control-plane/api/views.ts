import { redactRepoUrl } from '../builds/repo-url.ts';
import type { StoredDeployment, StoredRevision } from '../types.ts';

/** A deployment as the API shows it: secrets by name only, bookkeeping left out. */
export function deploymentView(d: StoredDeployment, url: string | null) {
  const { revision_count: _count, repo_url_sealed: _sealed, secrets, ...shown } = d;
  // Redacted again here: a record written before repo_url was sealed may still hold credentials.
  const repoUrl = shown.source_config.repo_url;
  const sourceConfig = { ...shown.source_config, repo_url: repoUrl === null ? null : redactRepoUrl(repoUrl) };
  return { ...shown, source_config: sourceConfig, secrets: secrets.map((s) => ({ name: s.name })), url };
}

/** A revision as the API shows it. */
export function revisionView(r: StoredRevision) {
  // The build log has its own endpoint (log-routes.ts); the app's env is the app's (its .env may hold keys); the
  // artifact is the platform's own bookkeeping (the official API has no such field).
  const {
    seq: _seq,
    tenant_id: _tenant,
    build_log: _log,
    build_log_offset: _offset,
    build_steps: _steps,
    app_env: _env,
    artifact: _artifact,
    ...shown
  } = r;
  return shown;
}

export type DeploymentView = ReturnType<typeof deploymentView>;
export type RevisionView = ReturnType<typeof revisionView>;

export interface ListView<T> {
  readonly resources: readonly T[];
  /** The offset to send for the next page (the public API's meaning). */
  readonly offset: number;
}
