import type { Logger } from 'pino';
import type { ControlPlaneStore } from '../store.ts';
import type { StoredDeployment, StoredRevision } from '../types.ts';
import type { Serving } from './serving.ts';

/**
 * At start: every deployment whose active revision is DEPLOYED is served again from its kept build, one after the
 * other, in the background (the API answers meanwhile).
 */
export async function resumeServing(store: ControlPlaneStore, serving: Serving, log: Logger): Promise<void> {
  let all;
  try {
    all = await store.allDeployments();
  } catch (err) {
    log.error({ err: (err as Error).message }, 'cannot list the deployments to serve again');
    return;
  }
  // The active revision of each: DEPLOYED, or DEPLOY_FAILED when an earlier start could not serve it (tried again:
  // SECRETS_KEY may have been put back). A revision that failed its first deploy never became active.
  const toServe: { d: StoredDeployment; rev: StoredRevision }[] = [];
  for (const d of all) {
    if (d.active_revision_id === null || d.bundled) continue;
    try {
      const rev = await store.getRevision(d.id, d.active_revision_id);
      if (rev?.status !== 'DEPLOYED' && rev?.status !== 'DEPLOY_FAILED') continue;
      toServe.push({ d, rev });
      await serving.starting(d, rev.id);
    } catch (err) {
      log.error({ deploymentId: d.id, err: (err as Error).message }, 'deployment could not be served again');
    }
  }
  for (const { d, rev } of toServe) {
    try {
      if (!(await serving.resume(d, rev))) continue;
      log.info({ deploymentId: d.id, revisionId: rev.id }, 'deployment served again after a restart');
    } catch (err) {
      log.error({ deploymentId: d.id, err: (err as Error).message }, 'deployment could not be served again');
    }
  }
}
