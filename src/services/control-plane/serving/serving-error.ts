import type { Logger } from 'pino';
import type { ControlPlaneStore } from '../store.ts';
import type { RouteTable } from '../../../routing/route-table.ts';
import { unservableRevision } from '../revision-state.ts';
import type { StoredDeployment, StoredRevision } from '../types.ts';

type Target = Pick<StoredDeployment, 'id' | 'tenant_id'>;
interface Deps {
  readonly store: ControlPlaneStore;
  readonly log: Logger;
}

/**
 * A deployment's `serving_error`: why its revision does not serve (a build gone, a process that keeps stopping),
 * shown on the deployment until it serves again. A failed write is logged, never thrown: serving goes on.
 */
export async function showServingError(o: Deps, d: Target, message: string): Promise<void> {
  await o.store
    .updateDeployment(d.tenant_id, d.id, (cur) =>
      cur.serving_error === message ? null : { deployment: { ...cur, serving_error: message } },
    )
    .catch((err: unknown) => o.log.warn({ err, deploymentId: d.id }, 'could not record the serving error'));
}

export async function clearServingError(o: Deps, d: Target): Promise<void> {
  await o.store
    .updateDeployment(d.tenant_id, d.id, (cur) => {
      if (cur.serving_error === undefined) return null;
      const { serving_error: _gone, ...rest } = cur;
      return { deployment: rest };
    })
    .catch((err: unknown) => o.log.warn({ err, deploymentId: d.id }, 'could not clear the serving error'));
}

/**
 * The deployment's active revision could not be started again (at a restart): nothing serves it, and everything says
 * so. Its route answers 503 naming it (not a dead port's 502), the deployment is no longer READY (`UNKNOWN`, with
 * `serving_error` saying why), and the revision is DEPLOY_FAILED with the same reason. A later start that serves it
 * again (Serving.resume) makes it READY and DEPLOYED again.
 */
export async function showUnservable(
  o: Deps & { readonly routes: RouteTable },
  d: Target,
  rev: StoredRevision,
  message: string,
): Promise<void> {
  await o.routes
    .set({ deploymentId: d.id, revisionId: rev.id, tenantId: d.tenant_id, target: '', unavailable: 'failed' })
    .catch((err: unknown) => o.log.warn({ err, deploymentId: d.id }, 'could not mark the route as not serving'));
  const failed = unservableRevision(rev, new Date(), `DEPLOY_FAILED: ${message}`);
  await o.store
    .updateDeployment(d.tenant_id, d.id, (cur) =>
      cur.active_revision_id !== rev.id
        ? null
        : {
            deployment: { ...cur, status: 'UNKNOWN', serving_error: message },
            ...(failed && { revision: failed }),
          },
    )
    .catch((err: unknown) => o.log.warn({ err, deploymentId: d.id }, 'could not record the serving error'));
}
