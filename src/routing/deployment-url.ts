/**
 * A deployment's public `url`, in one of the two forms the edge routes:
 * `https://{id}.{DEPLOYMENTS_DOMAIN}` when a domain is set, else the path
 * form `{PUBLIC_URL}/deployments/{id}`.
 */
export interface DeploymentAddressing {
  /** The edge's public address, e.g. `http://localhost:8080` (no trailing slash). */
  readonly publicUrl: string;
  /** DEPLOYMENTS_DOMAIN, or null for the path form. */
  readonly domain: string | null;
}

export const DEPLOYMENTS_PATH = '/deployments';

export function deploymentUrl(deploymentId: string, addressing: DeploymentAddressing): string {
  if (addressing.domain !== null) return `https://${deploymentId}.${addressing.domain}`;
  return `${addressing.publicUrl.replace(/\/+$/, '')}${DEPLOYMENTS_PATH}/${deploymentId}`;
}
