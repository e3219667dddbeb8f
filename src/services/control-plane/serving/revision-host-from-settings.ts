import type { RevisionHost } from '../../revision-host/revision-host.ts';
import { KubernetesRevisionHost } from '../../revision-host/kubernetes/kubernetes-host.ts';
import type { ControlPlaneSettings } from '../settings.ts';
import { localRevisionHost } from './local-revision-host.ts';

/**
 * The one place that picks the revision host (REVISION_HOST): this machine's sandboxed processes, or a Deployment per
 * revision on Kubernetes. Nothing else in the control plane learns which runs.
 */
export function revisionHostFromSettings(
  settings: ControlPlaneSettings,
  o: Parameters<typeof localRevisionHost>[1] & { readonly tokenKey: Buffer },
): RevisionHost {
  const k = settings.revisionHost;
  if (k.kind === 'local') return localRevisionHost(settings, o);
  return new KubernetesRevisionHost({
    log: o.log.child({ component: 'deployment', host: 'kubernetes' }),
    tokenKey: o.tokenKey,
    drainMs: settings.drainMs,
    manifests: {
      namespace: k.namespace,
      image: k.image,
      gatewayInternalUrl: k.gatewayInternalUrl,
      clusterDomain: k.clusterDomain,
      gatewayPodLabels: k.gatewayPodLabels,
      egressCidrs: k.egressCidrs,
      imagePullSecret: k.imagePullSecret,
      loadTimeoutSeconds: Math.ceil(settings.loadTimeoutMs / 1000),
      control: { logLevel: settings.logLevel, heartbeatMs: 10_000, ...settings.revisionAgentServer },
    },
  });
}
