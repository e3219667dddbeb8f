import type { Upstream } from '../proxy/forward.ts';

/**
 * Which upstream serves a (normalised) path: the control plane API under
 * `/v2` and its self-hosted form `/api-host/v2`; every other path goes to the
 * Agent Server of the default deployment.
 */
export function router(upstreams: { readonly controlPlane: Upstream; readonly agentServer: Upstream }) {
  return function route(path: string): Upstream {
    return isControlPlane(path) ? upstreams.controlPlane : upstreams.agentServer;
  };
}

export function isControlPlane(path: string): boolean {
  return underPrefix(path, '/v2') || underPrefix(path, '/api-host/v2');
}

function underPrefix(path: string, prefix: string): boolean {
  return path.startsWith(prefix) && (path.length === prefix.length || path.charCodeAt(prefix.length) === 0x2f);
}
