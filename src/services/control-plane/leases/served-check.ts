import type { Logger } from 'pino';
import type { Builds } from '../builds/builds.ts';
import type { BuildQueue } from '../builds/build-queue.ts';
import type { Serving } from '../serving/serving.ts';
import type { ControlPlaneStore } from '../store.ts';

/**
 * On the hosting gateway, now and then: what another gateway on the store changed in the records, done here where
 * the processes run. A deployment deleted there stops here (its process, route and data go); a redeploy asked there
 * (the deployment's latest revision an older DEPLOYED one, nothing of it building) is run here.
 */
export async function checkServed(
  store: ControlPlaneStore,
  serving: Serving,
  builds: Pick<Builds, 'enqueueRedeploy'>,
  queue: Pick<BuildQueue, 'runningIn'>,
  log: Logger,
): Promise<void> {
  for (const s of serving.servedNow()) {
    const d = await store.getDeployment(s.tenantId, s.deploymentId);
    if (d === null) {
      log.info({ deploymentId: s.deploymentId }, 'deployment deleted through another gateway: stopping it here');
      await serving.remove(s.deploymentId);
      continue;
    }
    if (d.latest_revision_id === s.revisionId || queue.runningIn(d.id) > 0) continue;
    const latest = await store.getRevision(d.id, d.latest_revision_id);
    if (latest?.status !== 'DEPLOYED') continue;
    log.info({ deploymentId: d.id, revisionId: latest.id }, 'redeploy asked through another gateway: running it here');
    builds.enqueueRedeploy(latest);
  }
}
