import { readFileSync } from 'node:fs';
import { list, matching, oneOf, optionalUrl, SettingsError, text, type Env } from '../../settings/env.ts';
import { parseCidr } from '../revision-host/local/sandbox/network.ts';

/**
 * Environment → which revision host the control plane runs (REVISION_HOST) and, for the Kubernetes one, where and
 * with what: namespace, image, the gateway's internal URL, the cluster domain, extra egress CIDRs, a pull secret.
 * Read beside the control plane's settings; an invalid or missing value fails naming the variable.
 */
export type RevisionHostSettings = { readonly kind: 'local' } | KubernetesHostSettings;

export interface KubernetesHostSettings {
  readonly kind: 'kubernetes';
  /** KUBERNETES_NAMESPACE (default: the pod's own namespace, else `default`). */
  readonly namespace: string;
  /** REVISION_IMAGE: the gateway's image, which each revision's pod runs (`gateway revision-pod`). */
  readonly image: string;
  /** GATEWAY_INTERNAL_URL: how pods reach the gateway's internal endpoints (artifacts, key checks). */
  readonly gatewayInternalUrl: string;
  /** KUBERNETES_CLUSTER_DOMAIN (default `cluster.local`). */
  readonly clusterDomain: string;
  /** REVISION_EGRESS_CIDRS: private ranges a revision may still reach (the operator's PostgreSQL, Redis). */
  readonly egressCidrs: readonly string[];
  /** REVISION_IMAGE_PULL_SECRET: the Secret pods pull the image with; null = none. */
  readonly imagePullSecret: string | null;
  /** GATEWAY_POD_LABELS (`k=v,...`, default `app.kubernetes.io/name=agent-gateway`): the gateway's own pods. */
  readonly gatewayPodLabels: Readonly<Record<string, string>>;
}

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function loadRevisionHostSettings(env: Env, ownNamespace = readOwnNamespace): RevisionHostSettings {
  if (oneOf(env, 'REVISION_HOST', ['local', 'kubernetes'], 'local') === 'local')
    return Object.freeze({ kind: 'local' });
  return Object.freeze({
    kind: 'kubernetes',
    namespace: matching(env, 'KUBERNETES_NAMESPACE', DNS_LABEL, ownNamespace() ?? 'default', 'a namespace name'),
    image: required(env, 'REVISION_IMAGE', 'the image of revision pods (the gateway image)'),
    gatewayInternalUrl: requiredUrl(env, 'GATEWAY_INTERNAL_URL'),
    clusterDomain: matching(env, 'KUBERNETES_CLUSTER_DOMAIN', /^[a-z0-9.-]+$/, 'cluster.local', 'a domain'),
    egressCidrs: Object.freeze(egressCidrs(env)),
    imagePullSecret: text(env, 'REVISION_IMAGE_PULL_SECRET', '') || null,
    gatewayPodLabels: Object.freeze(podLabels(env)),
  });
}

function required(env: Env, name: string, what: string): string {
  const v = text(env, name, '');
  if (v === '') throw new SettingsError(name, `required with REVISION_HOST=kubernetes: ${what}`);
  return v;
}

function requiredUrl(env: Env, name: string): string {
  required(env, name, 'how revision pods reach the gateway, e.g. http://agent-gateway-internal.<namespace>.svc:8081');
  return optionalUrl(env, name, ['http:', 'https:'])!.replace(/\/+$/, '');
}

function egressCidrs(env: Env): string[] {
  return list(env, 'REVISION_EGRESS_CIDRS').map((c) => {
    const cidr = parseCidr(c);
    if (cidr === null) throw new SettingsError('REVISION_EGRESS_CIDRS', `"${c}" is not a CIDR (e.g. 10.0.12.0/24)`);
    return cidr;
  });
}

function podLabels(env: Env): Record<string, string> {
  const pairs = list(env, 'GATEWAY_POD_LABELS');
  if (pairs.length === 0) return { 'app.kubernetes.io/name': 'agent-gateway' };
  return Object.fromEntries(
    pairs.map((p) => {
      const m = /^([A-Za-z0-9./_-]+)=([A-Za-z0-9._-]{0,63})$/.exec(p);
      if (m === null) throw new SettingsError('GATEWAY_POD_LABELS', `"${p}" is not a label (key=value)`);
      return [m[1]!, m[2]!];
    }),
  );
}

function readOwnNamespace(): string | null {
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim() || null;
  } catch {
    return null;
  }
}
