import type { Logger } from 'pino';
import type { ControlPlaneStore } from '../store.ts';
import type { StoredDeployment } from '../types.ts';

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
