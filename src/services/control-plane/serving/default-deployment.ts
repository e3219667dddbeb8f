import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { RouteTable } from '../../../routing/route-table.ts';
import type { ControlPlaneStore } from '../store.ts';
import type { StoredDeployment, StoredRevision } from '../types.ts';

export const DEFAULT_DEPLOYMENT_NAME = 'default';

export interface DefaultApp {
  /** The workspace listing it (the development key's). */
  readonly tenantId: string;
  /** Where the gateway's own Agent Server listens (loopback). */
  readonly target: string;
  /** Its langgraph.json, as configured (APP_CONFIG, else the example app's). */
  readonly configPath: string;
  readonly graphs: readonly string[];
}

/**
 * The default deployment: the app the gateway serves at every path outside
 * `/v2`, `/api-host` and `/deployments/` (APP_CONFIG, else the example app),
 * listed by the control plane like any deployment, with its `url` and a
 * route, so `{url}` and the bare paths reach the same app. It is served by
 * the gateway's own Agent Server, started with the gateway: it is never built
 * and has no process of its own (`bundled`), and the control plane refuses
 * to patch, redeploy or delete it. Made at the first start, its route
 * points at this start's server from then on.
 */
export async function registerDefaultDeployment(
  o: { readonly store: ControlPlaneStore; readonly routes: RouteTable; readonly now: () => Date; readonly log: Logger },
  app: DefaultApp,
): Promise<StoredDeployment> {
  const listed = await o.store.listDeployments(
    app.tenantId,
    { nameContains: DEFAULT_DEPLOYMENT_NAME },
    { limit: 100, offset: 0 },
  );
  let d = listed.find((x) => x.bundled === true && x.name === DEFAULT_DEPLOYMENT_NAME);
  if (d === undefined) {
    d = defaultRecord(o.store.region, app, o.now().toISOString());
    const revision = bundledRevision(d, app);
    await o.store.createDeployment(d, revision);
    o.log.info({ deploymentId: d.id, tenantId: app.tenantId }, 'default deployment created');
  }
  await o.routes.set({
    deploymentId: d.id,
    revisionId: d.active_revision_id!,
    tenantId: d.tenant_id,
    target: app.target,
  });
  return d;
}

function defaultRecord(region: StoredDeployment['region'], app: DefaultApp, now: string): StoredDeployment {
  const revisionId = randomUUID();
  return {
    id: randomUUID(),
    name: DEFAULT_DEPLOYMENT_NAME,
    tenant_id: app.tenantId,
    region,
    source: 'internal_source',
    source_config: {
      integration_id: null,
      repo_url: null,
      deployment_type: 'dev',
      build_on_push: false,
      custom_url: null,
      resource_spec: null,
    },
    source_revision_config: { repo_ref: null, langgraph_config_path: app.configPath, image_uri: null },
    secrets: [],
    created_at: now,
    updated_at: now,
    status: 'READY',
    latest_revision_id: revisionId,
    active_revision_id: revisionId,
    image_version: null,
    revision_count: 1,
    bundled: true,
  };
}

function bundledRevision(d: StoredDeployment, app: DefaultApp): StoredRevision {
  return {
    id: d.active_revision_id!,
    deployment_id: d.id,
    tenant_id: d.tenant_id,
    region: d.region,
    seq: 1,
    created_at: d.created_at,
    updated_at: d.created_at,
    status: 'DEPLOYED',
    status_message: null,
    source: d.source,
    source_revision_config: { ...d.source_revision_config, repo_commit_sha: null },
    status_history: [{ status: 'DEPLOYED', at: d.created_at, message: 'served by the gateway itself' }],
    graphs: Object.fromEntries(app.graphs.map((g) => [g, app.configPath])),
    auth_path: null,
  };
}
