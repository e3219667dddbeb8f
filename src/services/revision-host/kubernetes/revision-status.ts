import type { KubernetesObject, V1Deployment, V1Pod } from '@kubernetes/client-node';

/**
 * A revision's state, read from its Deployment and pods (pure): ready once the Deployment is Available with its pod
 * ready; failed with one line for a person when Kubernetes says it will not get there (progress deadline) or a
 * container is stuck (crash loop, out of memory, image pull, bad config); pending otherwise.
 */
export type RevisionStatus =
  | { readonly state: 'pending' }
  | { readonly state: 'ready' }
  | { readonly state: 'failed'; readonly reason: string }
  | { readonly state: 'gone' };

const STUCK_WAITING = new Set([
  'CrashLoopBackOff',
  'ImagePullBackOff',
  'ErrImagePull',
  'CreateContainerConfigError',
  'InvalidImageName',
]);

export function revisionStatus(
  deployment: V1Deployment | undefined,
  pods: ReadonlyMap<string, KubernetesObject>,
): RevisionStatus {
  if (deployment === undefined) return { state: 'gone' };
  const stuck = stuckContainer([...pods.values()] as V1Pod[]);
  if (stuck !== null) return { state: 'failed', reason: stuck };
  const conditions = deployment.status?.conditions ?? [];
  const progressing = conditions.find((c) => c.type === 'Progressing');
  if (progressing?.status === 'False' && progressing.reason === 'ProgressDeadlineExceeded') {
    return {
      state: 'failed',
      reason: `ProgressDeadlineExceeded: ${progressing.message ?? 'the pod did not become ready in time'}`,
    };
  }
  const available = conditions.find((c) => c.type === 'Available')?.status === 'True';
  return available && (deployment.status?.readyReplicas ?? 0) >= 1 ? { state: 'ready' } : { state: 'pending' };
}

/** The first container stuck, as `CrashLoopBackOff (last: OOMKilled, exit code 137: <message>)`. */
function stuckContainer(pods: readonly V1Pod[]): string | null {
  for (const pod of pods) {
    if (pod.metadata?.deletionTimestamp) continue;
    for (const c of pod.status?.containerStatuses ?? []) {
      const waiting = c.state?.waiting?.reason;
      const terminated = c.state?.terminated ?? c.lastState?.terminated;
      if (
        c.state?.terminated?.reason === 'OOMKilled' ||
        (waiting === 'CrashLoopBackOff' && terminated?.reason === 'OOMKilled')
      ) {
        return `OOMKilled: out of memory${last(terminated)}`;
      }
      if (waiting !== undefined && STUCK_WAITING.has(waiting)) {
        const message = c.state?.waiting?.message;
        return `${waiting}${message ? `: ${oneLine(message)}` : ''}${last(terminated)}`;
      }
    }
  }
  return null;
}

function last(t: { reason?: string; exitCode?: number; message?: string } | undefined): string {
  if (t === undefined) return '';
  const parts = [t.reason, `exit code ${t.exitCode}`, t.message ? oneLine(t.message) : undefined].filter(Boolean);
  return ` (last: ${parts.join(', ')})`;
}

function oneLine(s: string): string {
  const lines = s
    .trim()
    .split('\n')
    .filter((l) => l.trim() !== '');
  return (lines.at(-1) ?? '').slice(0, 300);
}
