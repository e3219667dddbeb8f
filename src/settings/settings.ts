import { loadAgentServerSettings, type AgentServerSettings } from '../services/agent-server/settings.ts';
import { loadControlPlaneSettings, type ControlPlaneSettings } from '../services/control-plane/settings.ts';
import { loadEdgeSettings, type EdgeSettings } from './edge.ts';
import type { Env } from './env.ts';
import { refuseHostProxies } from './host-proxies.ts';
import { loadKeyRegistrySettings, type KeyRegistrySettings } from './key-registry.ts';

/**
 * The settings of `gateway start`: read once from the environment by the entry point (cli/start.ts) and handed down.
 * Below it, process.env is only copied into the environment of a child process (a worker, git, npm, a deployment's
 * process) and, in the Agent Server, read as the served app's own environment (app-config.ts, graph-defaults.ts).
 * Frozen; an invalid value fails at boot naming the variable.
 */
export interface Settings extends EdgeSettings {
  readonly bundled: BundledSettings;
}

/**
 * The settings of the services this process runs itself (services/bundled.ts). A service that runs elsewhere has
 * null: its variables are not this process's, and an invalid one must not stop a gateway that does not use it.
 */
export interface BundledSettings {
  /** Null with CONTROL_PLANE_URL. */
  readonly controlPlane: ControlPlaneSettings | null;
  /** Null with AGENT_SERVER_URL. */
  readonly agentServer: AgentServerSettings | null;
  /** The key registry (and the services' Redis) of either service, and of KEY_CHECK; null when none of them runs. */
  readonly keys: KeyRegistrySettings | null;
  /** ADMIN_TOKEN is set: the admin listener manages API keys (`gateway keys` reaches them on any store). */
  readonly keysAdmin: boolean;
}

export function loadSettings(env: Env): Settings {
  const edge = loadEdgeSettings(env);
  const controlPlane = edge.controlPlaneUrl === null ? loadControlPlaneSettings(env) : null;
  // The bundled control plane runs deployments on this host: none of its addresses may be a trusted proxy.
  if (controlPlane !== null) refuseHostProxies(edge.trustProxy);
  const agentServer = edge.agentServerUrl === null ? loadAgentServerSettings(env) : null;
  const keys = controlPlane || agentServer || edge.keyCheck ? loadKeyRegistrySettings(env) : null;
  return Object.freeze({
    ...edge,
    bundled: Object.freeze({ controlPlane, agentServer, keys, keysAdmin: edge.adminToken !== null }),
  });
}
