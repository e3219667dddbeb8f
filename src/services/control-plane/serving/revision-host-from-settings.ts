import { RevisionLoadError, type RevisionHost } from '../../revision-host/revision-host.ts';
import { KubernetesRevisionHost } from '../../revision-host/kubernetes/kubernetes-host.ts';
import type { ControlPlaneSettings } from '../settings.ts';
import { localRevisionHost } from './local-revision-host.ts';
import type { RevisionDatabaseAccess } from '../../revision-host/local/revision-database.ts';

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
    // Its pods' output, read through the pod log API, in the deployment's logs as a local process's would be.
    onOutput: (owner, stream, line) => o.runtimeLogs.add(owner.deploymentId, owner.revisionId, stream, line),
    // Its own database, as its deployment's role, reached straight (the NetworkPolicy admits REVISION_EGRESS_CIDRS).
    ...(o.databases && { hostEnv: async (spec) => databaseEnv(await o.databases!.accessFor(spec.deploymentId)) }),
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

/** A pod's DATABASE_URI: its deployment's role and database on the operator's server (no socket of a gateway). */
function databaseEnv(a: RevisionDatabaseAccess): Record<string, string> {
  if ('path' in a.target)
    throw new RevisionLoadError('DEPLOYMENTS_DATABASE_URI names a Unix socket: a pod needs a host name to reach it');
  const host = a.target.host.includes(':') ? `[${a.target.host}]` : a.target.host;
  return {
    DATABASE_URI: `postgresql://${a.role}:${a.password}@${host}:${a.target.port}/${a.database}`,
    DATABASE_POOL_SIZE: String(a.poolSize),
  };
}
