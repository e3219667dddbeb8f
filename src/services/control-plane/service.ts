import { randomUUID } from 'node:crypto';
import { checkMemoryMb } from './resource-spec.ts';
import type { Logger } from 'pino';
import type { Builds } from './builds/builds.ts';
import { deploymentUrl, type DeploymentAddressing } from '../../routing/deployment-url.ts';
import {
  ApiError,
  badRequest,
  conflict,
  deploymentNotFound,
  invalid,
  quotaExceeded,
  revisionNotFound,
} from './errors.ts';
import { queuedRevision } from './revision-state.ts';
import type { CreateBody, ListDeploymentsQuery, ListRevisionsQuery, PatchBody } from './api/schemas.ts';
import type { RepoHostPolicy } from './builds/repo-hosts.ts';
import { newDeployment, patchedDeployment } from './deployment-record.ts';
import { secretOwner, type SecretBox } from './store/secrets.ts';
import type { ControlPlaneStore } from './store.ts';
import type { DeploymentLogs } from './serving/runtime-logs.ts';
import { DatabaseProvisionError, type DeploymentDatabases } from './databases/deployment-databases.ts';
import { isGitSource, type StoredDeployment, type StoredRevision } from './types.ts';
import { deploymentView, revisionView, type DeploymentView, type ListView, type RevisionView } from './api/views.ts';

/**
 * The control plane's operations, for one tenant (workspace) at a time.
 * Requests are answered from the store; builds run in the background.
 * Secret values are sealed on the way in and never leave again through the
 * API or a log line (only `secretValues`, for the Agent Server, opens them).
 */
export interface ServiceOptions {
  readonly store: ControlPlaneStore;
  readonly builds: Builds;
  readonly box: SecretBox;
  readonly now: () => Date;
  readonly log: Logger;
  /** A deployment's `url` (`{id}` replaced), overriding `addressing`; null = from `addressing`. */
  readonly deploymentUrl: string | null;
  /**
   * Where the edge serves deployments: a deployment's `url` once a revision of it was DEPLOYED. Null = records only
   * (nothing serves a deployment; `url` stays null).
   */
  readonly addressing?: (() => DeploymentAddressing) | null;
  /** Where a `repo_url` may point (checked at create and patch; the builder checks again). Default: anywhere. */
  readonly repoHosts?: RepoHostPolicy;
  /** MAX_DEPLOYMENTS_PER_TENANT: a tenant's deployments in this region; one more answers 409. Default: no limit. */
  readonly maxDeploymentsPerTenant?: number;
  /** Each deployment's own output (serving/runtime-logs.ts): forgotten with the deployment. */
  readonly logs?: DeploymentLogs;
  /** MAX_MEMORY_MB: the most `resource_spec.memory_mb` accepted (422 over it). Default: no bound but 65536. */
  readonly maxMemoryMb?: number;
  /**
   * DEPLOYMENTS_DATABASE_URI: each deployment's own PostgreSQL database and role, made with it (a failure fails the
   * create, 503) and dropped with it; null = none.
   */
  readonly databases?: Pick<DeploymentDatabases, 'create' | 'remove'> | null;
  /**
   * Why this platform cannot run a deployment of the workspace's organisation (its Redis cannot keep it apart: one
   * line saying what the operator must change), or null. Such a create answers 409 before anything is stored or built.
   */
  readonly servingRefusal?: (tenantId: string) => Promise<string | null>;
}

export class DeploymentService {
  constructor(private readonly o: ServiceOptions) {}

  async create(tenantId: string, body: CreateBody): Promise<DeploymentView> {
    checkMemoryMb(body.source_config.resource_spec, this.o.maxMemoryMb ?? 65_536);
    await this.checkRepoHost(body.source_config.repo_url);
    const refused = (await this.o.servingRefusal?.(tenantId)) ?? null;
    if (refused !== null) {
      this.o.log.warn(
        { tenantId, why: refused },
        'deployment refused: this platform cannot keep its organisation apart',
      );
      throw conflict(`Deployments of this workspace's organisation cannot run here: ${refused}.`);
    }
    const now = this.o.now().toISOString();
    const id = randomUUID();
    const deployment = newDeployment(id, tenantId, this.o.store.region, body, this.o.box, now);
    const first = queuedRevision(deployment, 1, now);
    const stored = { ...deployment, latest_revision_id: first.id };
    const max = this.o.maxDeploymentsPerTenant ?? Infinity;
    if (!(await this.o.store.createDeployment(stored, first, max))) {
      this.o.log.warn({ tenantId, max }, 'deployment refused: tenant at MAX_DEPLOYMENTS_PER_TENANT');
      throw quotaExceeded(
        'deployments_per_tenant',
        `workspace ${tenantId} already has ${max} deployments in region ${this.o.store.region}, the most MAX_DEPLOYMENTS_PER_TENANT allows. Delete one to free its slot, or ask the operator to raise MAX_DEPLOYMENTS_PER_TENANT.`,
      );
    }
    await this.provisionDatabase(tenantId, id);
    this.o.log.info(
      { deploymentId: id, revisionId: first.id, tenantId, source: body.source, secrets: body.secrets.length },
      'deployment created',
    );
    this.o.builds.enqueue(first);
    return this.view(stored);
  }

  async list(tenantId: string, q: ListDeploymentsQuery): Promise<ListView<DeploymentView>> {
    const filter = {
      nameContains: q.name_contains,
      statuses: q.status,
      deploymentTypes: q.deployment_type,
      ids: q.deployment_ids,
    };
    const found = await this.o.store.listDeployments(tenantId, filter, { limit: q.limit, offset: q.offset });
    return { resources: found.map((d) => this.view(d)), offset: q.offset + found.length };
  }

  async get(tenantId: string, id: string): Promise<DeploymentView> {
    return this.view(await this.require(tenantId, id));
  }

  /**
   * `source_config` changes only the fields given (null clears a nullable
   * one). `source_revision_config` merges its non-null fields, and with a
   * non-null `repo_ref` or `image_uri` it also creates a revision, which becomes `latest_revision_id` and
   * supersedes any unfinished one. `secrets`, when given, replaces the list.
   */
  async patch(tenantId: string, id: string, body: PatchBody): Promise<DeploymentView> {
    checkMemoryMb(body.source_config?.resource_spec, this.o.maxMemoryMb ?? 65_536);
    await this.checkRepoHost(body.source_config?.repo_url);
    const now = this.o.now().toISOString();
    const changed = await this.o.store.updateDeployment(tenantId, id, (d) => {
      if (d.bundled) throw bundledConflict(d.id, 'patched');
      if (body.name !== undefined && body.name !== d.name)
        throw badRequest(`Field "name" cannot be changed (deployment ${d.id} is named "${d.name}").`);
      if (body.source !== undefined && body.source !== d.source)
        throw badRequest(`Field "source" cannot be changed (deployment ${d.id} has source "${d.source}").`);
      const src = body.source_revision_config;
      if (body.source_config === undefined && !src && body.secrets === undefined) return null;
      const next = patchedDeployment(d, body, this.o.box, now);
      if (!src || (src.repo_ref == null && src.image_uri == null)) return { deployment: next };
      const revision = queuedRevision(next, d.revision_count + 1, now);
      return {
        deployment: { ...next, latest_revision_id: revision.id, revision_count: d.revision_count + 1 },
        revision,
      };
    });
    if (changed === null) throw deploymentNotFound(id);
    if (changed.revision) {
      this.o.log.info({ deploymentId: id, revisionId: changed.revision.id, tenantId }, 'revision created');
      await this.o.builds.supersede(id, changed.revision.id);
      this.o.builds.enqueue(changed.revision);
    }
    return this.view(changed.deployment);
  }

  async remove(tenantId: string, id: string): Promise<void> {
    if ((await this.require(tenantId, id)).bundled) throw bundledConflict(id, 'deleted');
    // Its database first: when PostgreSQL refuses, the deployment stays, and a retried delete drops it.
    await this.o.databases?.remove(id).catch(rethrowProvision);
    const artifacts = await this.o.builds.artifactsOf(id);
    const removed = await this.o.store.deleteDeployment(tenantId, id);
    if (removed === null) throw deploymentNotFound(id);
    await this.o.builds.forget(id, artifacts);
    this.o.logs?.forget(id);
    this.o.log.info({ deploymentId: id, tenantId }, 'deployment deleted');
  }

  async listRevisions(tenantId: string, id: string, q: ListRevisionsQuery): Promise<ListView<RevisionView>> {
    await this.require(tenantId, id);
    const found = await this.o.store.listRevisions(id, q.status, { limit: q.limit, offset: q.offset });
    return { resources: found.map(revisionView), offset: q.offset + found.length };
  }

  async getRevision(tenantId: string, id: string, revisionId: string): Promise<RevisionView> {
    await this.require(tenantId, id);
    const r = await this.o.store.getRevision(id, revisionId);
    if (r === null) throw revisionNotFound(revisionId);
    return revisionView(r);
  }

  /** What installing the revision's dependencies printed (null: nothing installed, or not yet). */
  async buildLog(tenantId: string, id: string, revisionId: string) {
    const r = await this.revisionRecord(tenantId, id, revisionId);
    return { revision_id: r.id, status: r.status, build_log: r.build_log ?? null, steps: r.build_steps ?? [] };
  }

  /** The revision as stored (its build log included), for the tenant owning its deployment only. */
  async revisionRecord(tenantId: string, id: string, revisionId: string): Promise<StoredRevision> {
    await this.require(tenantId, id);
    const r = await this.o.store.getRevision(id, revisionId);
    if (r === null) throw revisionNotFound(revisionId);
    return r;
  }

  /** 404 unless the deployment is the tenant's (what every read of a deployment's own data checks first). */
  async requireOwn(tenantId: string, id: string): Promise<void> {
    await this.require(tenantId, id);
  }

  /** The deployment's secrets in the clear: for the process that runs it, never for an API answer. */
  async secretValues(tenantId: string, id: string): Promise<Record<string, string>> {
    const d = await this.require(tenantId, id);
    return Object.fromEntries(d.secrets.map((s) => [s.name, this.o.box.open(s.ciphertext, secretOwner(d.id, s.name))]));
  }

  private async require(tenantId: string, id: string): Promise<StoredDeployment> {
    const d = await this.o.store.getDeployment(tenantId, id);
    if (d === null) throw deploymentNotFound(id);
    return d;
  }

  /** The new deployment's database and role; when they cannot be made, the deployment is not kept either (503). */
  private async provisionDatabase(tenantId: string, id: string): Promise<void> {
    if (!this.o.databases) return;
    try {
      await this.o.databases.create(id);
    } catch (err) {
      await this.o.store.deleteDeployment(tenantId, id);
      this.o.log.error({ deploymentId: id, tenantId, err: (err as Error).message }, 'deployment database not made');
      rethrowProvision(err);
    }
  }

  /** A repo_url reaching a host it may not (repo-hosts.ts): 422 naming repo_url. */
  private async checkRepoHost(url: string | null | undefined): Promise<void> {
    const refused = url ? await this.o.repoHosts?.check(url) : null;
    if (refused) throw invalid({ loc: ['body', 'source_config', 'repo_url'], msg: refused, type: 'value_error' });
  }

  /**
   * Serves an older DEPLOYED revision again. Its build kept: the revision becomes the latest (unfinished ones are
   * superseded) and its process starts from that build, then takes the traffic. Its build gone: a new revision of the
   * same commit is built (as a patch with that `repo_ref` would).
   */
  async redeploy(tenantId: string, id: string, revisionId: string): Promise<DeploymentView> {
    const d = await this.require(tenantId, id);
    if (d.bundled) throw bundledConflict(id, 'redeployed');
    const r = await this.o.store.getRevision(id, revisionId);
    if (r === null) throw revisionNotFound(revisionId);
    if (r.status !== 'DEPLOYED')
      throw conflict(`Revision ID ${revisionId} is ${r.status}: only a DEPLOYED revision can be redeployed.`);
    if (d.active_revision_id === r.id && d.latest_revision_id === r.id) return this.view(d);
    if (!(await this.o.builds.hasBuild(r))) {
      const ref = r.source_revision_config.repo_commit_sha ?? r.source_revision_config.repo_ref;
      this.o.log.info({ deploymentId: id, revisionId, ref }, 'redeploy: build not kept, building again');
      return this.patch(tenantId, id, {
        source_revision_config: {
          repo_ref: ref,
          image_uri: r.source_revision_config.image_uri,
          langgraph_config_path: r.source_revision_config.langgraph_config_path,
        },
      });
    }
    const changed = await this.o.store.updateDeployment(tenantId, id, (cur) => ({
      deployment: { ...cur, latest_revision_id: r.id, updated_at: this.o.now().toISOString() },
    }));
    if (changed === null) throw deploymentNotFound(id);
    this.o.log.info({ deploymentId: id, revisionId, tenantId }, 'redeploy');
    await this.o.builds.supersede(id, r.id);
    this.o.builds.enqueueRedeploy(r);
    return this.view(changed.deployment);
  }

  /** A new commit on a `build_on_push` deployment's branch: a new revision of the same `repo_ref`. */
  async pushed(d: StoredDeployment, sha: string): Promise<void> {
    this.o.log.info({ deploymentId: d.id, ref: d.source_revision_config.repo_ref, sha }, 'build on push');
    await this.patch(d.tenant_id, d.id, { source_revision_config: { repo_ref: d.source_revision_config.repo_ref } });
  }

  private view(d: StoredDeployment): DeploymentView {
    let url: string | null = null;
    if (this.o.deploymentUrl !== null) url = this.o.deploymentUrl.replaceAll('{id}', d.id);
    // Only a git source is run here (an image source stays a record): its url once a revision of it was DEPLOYED.
    else if (this.o.addressing && d.active_revision_id !== null && isGitSource(d.source))
      url = deploymentUrl(d.id, this.o.addressing());
    return deploymentView(d, url);
  }
}

/** The operator's PostgreSQL refused or is away: 503 with what to fix (not the client's mistake). */
function rethrowProvision(err: unknown): never {
  if (err instanceof DatabaseProvisionError) throw new ApiError(503, err.message);
  throw err;
}

/** The default deployment is the gateway's own app (default-deployment.ts): it changes with the gateway's settings. */
function bundledConflict(id: string, what: string) {
  return conflict(
    `Deployment ${id} is the default deployment, served by the gateway itself: it cannot be ${what}. Its app is the gateway's APP_CONFIG; create a deployment of your own from a repository instead.`,
  );
}
