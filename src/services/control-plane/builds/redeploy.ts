import type { RunningRevision } from '../../revision-host/revision-host.ts';
import type { StoredRevision } from '../types.ts';
import type { BuildsOptions } from './builds-options.ts';
import { servingRevision } from './revision-run.ts';

/**
 * Serves an older DEPLOYED revision again from its kept build (a redeploy): its process starts (the load check
 * again), then the route and the deployment's active revision move to it. A failed start is shown on the
 * deployment (`serving_error`); the revision serving until then stays.
 */
export async function redeploy(o: BuildsOptions, rev: StoredRevision, signal: AbortSignal): Promise<void> {
  const log = o.log.child({ deploymentId: rev.deployment_id, revisionId: rev.id });
  const commit = async () => {
    let done = false;
    await o.store.updateDeployment(rev.tenant_id, rev.deployment_id, (d) => {
      done = d.latest_revision_id === rev.id;
      return done ? { deployment: servingRevision(d, rev, o.now()) } : null;
    });
    return done;
  };
  let ok: boolean;
  if (o.serving && o.serving.current(rev.deployment_id)?.revisionId !== rev.id) {
    const d = await o.store.getDeployment(rev.tenant_id, rev.deployment_id);
    if (d === null) return;
    let proc: RunningRevision;
    try {
      proc = await o.serving.launch(d, rev, signal);
    } catch (err) {
      if (signal.aborted) return;
      log.warn({ reason: (err as Error).message }, 'redeploy failed');
      await o.store.updateDeployment(rev.tenant_id, rev.deployment_id, (cur) => ({
        deployment: { ...cur, serving_error: `redeploy of revision ${rev.id} failed: ${(err as Error).message}` },
      }));
      return;
    }
    if (signal.aborted) return void (await proc.stop(0));
    ok = await o.serving.promote(d, rev.id, proc, commit);
  } else ok = await commit();
  if (ok) log.info('revision redeployed');
}
