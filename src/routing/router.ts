import { DEPLOYMENTS_PATH } from './deployment-url.ts';
import type { Upstream } from '../proxy/forward.ts';
import type { RouteUnavailable } from './route-table.ts';

/**
 * Where one request goes, decided from its (normalised) path and Host:
 * - a deployment, by host (`{id}.{DEPLOYMENTS_DOMAIN}`) or by path (`/deployments/{id}/...`, the prefix stripped);
 * - the control plane API under `/v2` and its self-hosted form `/api-host/v2`;
 * - every other path: the Agent Server of the default deployment.
 * `path` is the path as its upstream sees it: the rules match it and it is forwarded.
 */
export type Destination =
  | { readonly kind: 'service'; readonly upstream: () => Upstream; readonly path: string }
  | {
      readonly kind: 'deployment';
      /** The deployment named by the request (its id, or what stood in its place: see DEPLOYMENT_ID). */
      readonly deploymentId: string;
      /**
       * The upstream of its route at the moment of asking, or null when it has none (unknown, not deployed yet,
       * deleted) or the name is no id at all. Asked right before forwarding, not before the limit step: a rollover
       * during that step (a store round trip) must not send the request to a pool already retired.
       */
      readonly upstream: () => Upstream | null;
      /** Why the deployment, though it exists, has no process serving it now (asked when `upstream` gave null). */
      readonly down: () => RouteUnavailable | undefined;
      readonly path: string;
      /** The path prefix stripped (`/deployments/{id}`), '' in the host form. */
      readonly prefix: string;
    };

export interface RouterOptions {
  readonly controlPlane: Upstream;
  readonly agentServer: Upstream;
  /** The upstream of a deployment's current route, or null. */
  readonly deployment: (deploymentId: string) => Upstream | null;
  /** Why a deployment that exists is not served now (its route says so); default: never. */
  readonly deploymentDown?: (deploymentId: string) => RouteUnavailable | undefined;
  /** DEPLOYMENTS_DOMAIN (lowercase), or null: no host form. */
  readonly domain?: string | null;
}

/** What a deployment id may look like (the control plane makes UUIDs); anything else is no deployment. */
export const DEPLOYMENT_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

export function router(options: RouterOptions) {
  const { controlPlane, agentServer, deployment } = options;
  const deploymentDown = options.deploymentDown ?? (() => undefined);
  const hostSuffix = options.domain ? `.${options.domain}` : null;
  // Made once: the request path asks for one of them on every request.
  const toControlPlane = () => controlPlane;
  const toAgentServer = () => agentServer;

  const toDeployment = (deploymentId: string, path: string, prefix: string): Destination => ({
    kind: 'deployment',
    deploymentId,
    upstream: () => (DEPLOYMENT_ID.test(deploymentId) ? deployment(deploymentId) : null),
    down: () => (DEPLOYMENT_ID.test(deploymentId) ? deploymentDown(deploymentId) : undefined),
    path,
    prefix,
  });

  return function route(path: string, host: string | undefined): Destination {
    if (hostSuffix !== null && host !== undefined) {
      const id = deploymentOfHost(host, hostSuffix);
      if (id !== null) return toDeployment(id, path, '');
    }
    const named = deploymentPath(path);
    if (named !== null) return toDeployment(named.deploymentId, named.path, named.prefix);
    return { kind: 'service', upstream: isControlPlane(path) ? toControlPlane : toAgentServer, path };
  };
}

/**
 * A path of the path form, `/deployments/{id}/rest`, split into the deployment named (possibly '' or no id at all),
 * the path as the deployment sees it (`/rest`, `/` for none) and the prefix stripped; null for any other path.
 */
export function deploymentPath(path: string): { deploymentId: string; path: string; prefix: string } | null {
  if (!underPrefix(path, DEPLOYMENTS_PATH)) return null;
  const rest = path.slice(DEPLOYMENTS_PATH.length + 1); // after "/deployments/"
  const slash = rest.indexOf('/');
  const deploymentId = slash === -1 ? rest : rest.slice(0, slash);
  return { deploymentId, path: slash === -1 ? '/' : rest.slice(slash), prefix: `${DEPLOYMENTS_PATH}/${deploymentId}` };
}

/** The deployment id of a Host `{id}.{domain}[:port]` (one label before the domain), or null for any other host. */
function deploymentOfHost(host: string, suffix: string): string | null {
  const colon = host.lastIndexOf(':');
  const name = (colon !== -1 && !host.endsWith(']') ? host.slice(0, colon) : host).toLowerCase();
  if (!name.endsWith(suffix) || name.length === suffix.length) return null;
  return name.slice(0, -suffix.length);
}

export function isControlPlane(path: string): boolean {
  return underPrefix(path, '/v2') || underPrefix(path, '/api-host/v2');
}

function underPrefix(path: string, prefix: string): boolean {
  return path.startsWith(prefix) && (path.length === prefix.length || path.charCodeAt(prefix.length) === 0x2f);
}
