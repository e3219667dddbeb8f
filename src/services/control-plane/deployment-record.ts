import type { Region } from '../../region.ts';
import type { CreateBody, PatchBody } from './api/schemas.ts';
import { storeRepoUrl } from './builds/repo-url.ts';
import { invalid } from './errors.ts';
import { secretOwner, type SecretBox } from './store/secrets.ts';
import { isGitSource, type StoredDeployment, type StoredSecret } from './types.ts';

/**
 * A deployment's stored record from what a client sent: made from a create body, changed by a patch body. Secret
 * values and a repo URL with credentials are sealed here (store/secrets.ts); the record never holds them in clear.
 */
const DEFAULT_CONFIG_PATH = 'langgraph.json';

/** The record of a new deployment, before its first revision (`latest_revision_id` is set by the caller). */
export function newDeployment(
  id: string,
  tenantId: string,
  region: Region,
  body: CreateBody,
  box: SecretBox,
  now: string,
): StoredDeployment {
  const git = isGitSource(body.source);
  const src = body.source_revision_config;
  const repo = storeRepoUrl(box, id, body.source_config.repo_url ?? null);
  return {
    id,
    name: body.name,
    tenant_id: tenantId,
    region,
    source: body.source,
    source_config: {
      integration_id: body.source_config.integration_id ?? null,
      repo_url: repo.repo_url,
      deployment_type: body.source_config.deployment_type ?? 'dev',
      build_on_push: body.source_config.build_on_push ?? false,
      custom_url: body.source_config.custom_url ?? null,
      resource_spec: body.source_config.resource_spec ?? null,
    },
    source_revision_config: {
      repo_ref: src.repo_ref ?? null,
      langgraph_config_path: src.langgraph_config_path ?? (git ? DEFAULT_CONFIG_PATH : null),
      image_uri: src.image_uri ?? null,
    },
    secrets: sealSecrets(box, id, body.secrets),
    repo_url_sealed: repo.repo_url_sealed,
    created_at: now,
    updated_at: now,
    status: 'AWAITING_DATABASE',
    latest_revision_id: '',
    active_revision_id: null,
    image_version: null,
    revision_count: 1,
  };
}

/** `d` with a patch's fields applied (`secrets`, when given, replaces the list); checked buildable. */
export function patchedDeployment(d: StoredDeployment, body: PatchBody, box: SecretBox, now: string): StoredDeployment {
  const sc = body.source_config;
  const repo = sc?.repo_url === undefined ? null : storeRepoUrl(box, d.id, sc.repo_url, d);
  const next: StoredDeployment = {
    ...d,
    source_config: { ...d.source_config, ...defined(sc ?? {}), ...(repo && { repo_url: repo.repo_url }) },
    ...(repo && { repo_url_sealed: repo.repo_url_sealed }),
    // In source_revision_config a null means "not given" (clients send the whole object with nulls).
    source_revision_config: { ...d.source_revision_config, ...given(body.source_revision_config ?? {}) },
    secrets: body.secrets === undefined ? d.secrets : sealSecrets(box, d.id, body.secrets),
    updated_at: now,
  };
  checkBuildable(next);
  return next;
}

function sealSecrets(
  box: SecretBox,
  deploymentId: string,
  secrets: readonly { name: string; value: string }[],
): StoredSecret[] {
  return secrets.map((s) => ({ name: s.name, ciphertext: box.seal(s.value, secretOwner(deploymentId, s.name)) }));
}

/** A patch may not leave a deployment unable to build its next revision. */
function checkBuildable(d: StoredDeployment): void {
  const missing = (loc: string[]) =>
    invalid({ loc, msg: `cannot be null for source "${d.source}"`, type: 'value_error' });
  if (isGitSource(d.source)) {
    if (!d.source_config.repo_url) throw missing(['body', 'source_config', 'repo_url']);
    if (!d.source_revision_config.repo_ref) throw missing(['body', 'source_revision_config', 'repo_ref']);
  } else if (!d.source_revision_config.image_uri) {
    throw missing(['body', 'source_revision_config', 'image_uri']);
  }
}

/** The fields actually given (undefined = not given; null is a value). */
function defined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** The fields given with a value (undefined and null = not given). */
function given<T extends object>(o: T): { [K in keyof T]?: NonNullable<T[K]> } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null)) as {
    [K in keyof T]?: NonNullable<T[K]>;
  };
}
