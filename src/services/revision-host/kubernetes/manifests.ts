import { createHash } from 'node:crypto';
import type { V1Deployment, V1NetworkPolicy, V1Secret, V1Service } from '@kubernetes/client-node';
import { MEMORY_OVERHEAD_MB, type RevisionSpec } from '../revision-host.ts';
import { podVariables } from './pod-env.ts';
import {
  POD_APP_DIR,
  POD_ARGS,
  POD_ENV,
  POD_HEALTH_PATH,
  POD_PORT,
  POD_TMP_DIR,
  type RevisionPodControl,
} from './pod-contract.ts';

/**
 * A revision's four Kubernetes objects, pure: a Secret (the app's env and secrets, the revision's token), a
 * Deployment running the gateway's image as `gateway revision-pod` (locked down: non-root, read-only root, no
 * service-account token), a ClusterIP Service and a NetworkPolicy (ingress from the gateway only; egress to DNS, the
 * gateway and the internet minus private ranges, plus the operator's CIDRs). Names and the target are derived from
 * the ids alone, so every gateway replica builds the same objects and the same route target.
 */
export interface ManifestSettings {
  readonly namespace: string;
  readonly image: string;
  /** How pods reach the gateway's internal endpoints, without a trailing slash. */
  readonly gatewayInternalUrl: string;
  readonly clusterDomain: string;
  /** The labels of the gateway's own pods (ingress from them, egress to them). */
  readonly gatewayPodLabels: Readonly<Record<string, string>>;
  readonly egressCidrs: readonly string[];
  readonly imagePullSecret: string | null;
  /** Extra labels on every object. */
  readonly labels?: Readonly<Record<string, string>>;
  /** Seconds a pod has between SIGTERM and SIGKILL (at least the drain). */
  readonly terminationGraceSeconds: number;
  /** Seconds the pod has to load its app before the startup probe gives up. */
  readonly loadTimeoutSeconds: number;
  readonly control: Pick<RevisionPodControl, 'logLevel' | 'heartbeatMs' | 'ttlSweepMs' | 'webhookHostsAllowed'>;
}

export interface RevisionManifests {
  readonly name: string;
  readonly target: string;
  readonly secret: V1Secret;
  readonly deployment: V1Deployment;
  readonly service: V1Service;
  readonly networkPolicy: V1NetworkPolicy;
}

export const MANAGED_BY = 'agent-gateway';
export const DEPLOYMENT_LABEL = 'agent-gateway/deployment-id';
export const REVISION_LABEL = 'agent-gateway/revision-id';
/** The ranges a revision may not reach unless the operator names them (REVISION_EGRESS_CIDRS). */
export const PRIVATE_RANGES = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10'];
export const CONTAINER = 'api-server';
const TMP_SIZE = '256Mi';

/** `rev-<deployment>-<revision>-<hash>`: DNS-1035, ≤ 63 characters, stable for the pair of ids. */
export function revisionObjectName(deploymentId: string, revisionId: string): string {
  const hash = createHash('sha256').update(`${deploymentId}\0${revisionId}`).digest('hex').slice(0, 10);
  return `rev-${short(deploymentId)}-${short(revisionId)}-${hash}`;
}

/** The Service's cluster address: the same string on every replica. */
export function revisionTarget(name: string, namespace: string, clusterDomain: string): string {
  return `http://${name}.${namespace}.svc.${clusterDomain}:${POD_PORT}`;
}

export function revisionLabels(spec: Pick<RevisionSpec, 'deploymentId' | 'revisionId'>): Record<string, string> {
  return {
    'app.kubernetes.io/managed-by': MANAGED_BY,
    'app.kubernetes.io/component': 'revision',
    [DEPLOYMENT_LABEL]: labelValue(spec.deploymentId),
    [REVISION_LABEL]: labelValue(spec.revisionId),
  };
}

export function revisionManifests(spec: RevisionSpec, s: ManifestSettings, token: string): RevisionManifests {
  const name = revisionObjectName(spec.deploymentId, spec.revisionId);
  const selector = revisionLabels(spec);
  const labels = { ...s.labels, ...selector };
  const metadata = { name, namespace: s.namespace, labels };
  const secret: V1Secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata,
    type: 'Opaque',
    data: base64Values({ ...spec.env, [POD_ENV.token]: token }),
  };
  const service: V1Service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata,
    spec: {
      type: 'ClusterIP',
      selector,
      ports: [{ name: 'http', port: POD_PORT, targetPort: POD_PORT, protocol: 'TCP' }],
    },
  };
  return {
    name,
    target: revisionTarget(name, s.namespace, s.clusterDomain),
    secret,
    deployment: deployment(spec, s, name, labels, selector),
    service,
    networkPolicy: networkPolicy(s, metadata, selector),
  };
}

function deployment(
  spec: RevisionSpec,
  s: ManifestSettings,
  name: string,
  labels: Record<string, string>,
  selector: Record<string, string>,
): V1Deployment {
  const limitMb = spec.memoryMb + MEMORY_OVERHEAD_MB;
  const probe = { httpGet: { path: POD_HEALTH_PATH, port: POD_PORT } };
  const startupPeriod = 2;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: s.namespace, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: selector },
      revisionHistoryLimit: 0,
      // Fetching the artifact and loading the app may take the whole load timeout, then some room to pull the image.
      progressDeadlineSeconds: Math.max(120, s.loadTimeoutSeconds * 2),
      template: {
        metadata: { labels },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          terminationGracePeriodSeconds: s.terminationGraceSeconds,
          ...(s.imagePullSecret !== null ? { imagePullSecrets: [{ name: s.imagePullSecret }] } : {}),
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 1000,
            runAsGroup: 1000,
            fsGroup: 1000,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: CONTAINER,
              image: s.image,
              args: [...POD_ARGS],
              ports: [{ name: 'http', containerPort: POD_PORT, protocol: 'TCP' }],
              env: podEnv(spec, s),
              envFrom: [{ secretRef: { name } }],
              resources: {
                requests: { memory: `${limitMb}Mi`, cpu: '100m' },
                limits: { memory: `${limitMb}Mi`, cpu: '1' },
              },
              startupProbe: {
                ...probe,
                periodSeconds: startupPeriod,
                failureThreshold: Math.ceil(s.loadTimeoutSeconds / startupPeriod) + 30,
              },
              readinessProbe: { ...probe, periodSeconds: 5, failureThreshold: 3 },
              livenessProbe: { ...probe, periodSeconds: 10, failureThreshold: 6, timeoutSeconds: 5 },
              terminationMessagePolicy: 'FallbackToLogsOnError',
              securityContext: {
                runAsNonRoot: true,
                runAsUser: 1000,
                readOnlyRootFilesystem: true,
                allowPrivilegeEscalation: false,
                privileged: false,
                capabilities: { drop: ['ALL'] },
                seccompProfile: { type: 'RuntimeDefault' },
              },
              volumeMounts: [
                { name: 'app', mountPath: POD_APP_DIR },
                { name: 'tmp', mountPath: POD_TMP_DIR },
              ],
            },
          ],
          volumes: [
            // The unpacked build: room for the checkout and node_modules (the build's own bounds).
            { name: 'app', emptyDir: { sizeLimit: '4Gi' } },
            { name: 'tmp', emptyDir: { sizeLimit: TMP_SIZE } },
          ],
        },
      },
    },
  };
}

function podEnv(spec: RevisionSpec, s: ManifestSettings): { name: string; value: string }[] {
  const control: RevisionPodControl = {
    deploymentId: spec.deploymentId,
    revisionId: spec.revisionId,
    configPath: spec.configPath,
    sourcePrefix: spec.sourcePrefix ?? '',
    org: spec.org,
    dataPrefix: spec.dataPrefix,
    ...s.control,
  };
  // The token is in the Secret (envFrom), never in the Deployment's own spec.
  const vars = podVariables(s.gatewayInternalUrl, { sha256: spec.artifact?.sha256 ?? '', token: '', control });
  return Object.entries(vars)
    .filter(([name]) => name !== POD_ENV.token)
    .map(([name, value]) => ({ name, value }));
}

function networkPolicy(
  s: ManifestSettings,
  metadata: V1NetworkPolicy['metadata'],
  selector: Record<string, string>,
): V1NetworkPolicy {
  const gateway = [{ podSelector: { matchLabels: { ...s.gatewayPodLabels } } }];
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata,
    spec: {
      podSelector: { matchLabels: selector },
      policyTypes: ['Ingress', 'Egress'],
      // `_from`: the client's name for `from` (its serializer writes `from`).
      ingress: [{ _from: gateway, ports: [{ port: POD_PORT, protocol: 'TCP' }] }],
      egress: [
        {
          to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } } }],
          ports: [
            { port: 53, protocol: 'UDP' },
            { port: 53, protocol: 'TCP' },
          ],
        },
        { to: gateway },
        { to: [{ ipBlock: { cidr: '0.0.0.0/0', except: [...PRIVATE_RANGES] } }] },
        ...(s.egressCidrs.length > 0 ? [{ to: s.egressCidrs.map((cidr) => ({ ipBlock: { cidr } })) }] : []),
      ],
    },
  };
}

function short(id: string): string {
  return (
    id
      .toLowerCase()
      .replace(/[^a-z0-9]/g, '')
      .slice(0, 12) || 'x'
  );
}

/** A label value: ≤ 63 of `[A-Za-z0-9._-]`, alphanumeric at both ends. */
function labelValue(v: string): string {
  return v
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .slice(0, 63)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
}

function base64Values(values: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
}
