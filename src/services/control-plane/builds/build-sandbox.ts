import { DEFAULT_ORG } from '../../../keys/bootstrap.ts';
import type { KeyRegistry } from '../../../keys/types.ts';
import type { NetworkPlan, NetworkProbe } from '../../revision-host/local/sandbox/network.ts';
import { probeSandbox, type SandboxMode, type SandboxSetting } from '../../revision-host/local/sandbox/probe.ts';

/**
 * Where a build's `git` and `npm` run: in the bubblewrap sandbox when this host has one (SANDBOX, probed once at
 * start, as the revision host does), else as plain children of the gateway. Without a sandbox an install (its scripts
 * are the tenant's code) runs only for the gateway's own organisation unless TRUST_ALL_TENANTS says every tenant is
 * trusted: the same rule as the revision host's, applied before npm rather than at the load check after it. The same
 * holds without a network namespace (SANDBOX_NETWORK): a step on the host's network reaches its loopback.
 */
export interface BuildSandbox {
  readonly mode: SandboxMode;
  /** The steps' network: a namespace of its own (git's made from it: step-network.ts), or the host's. */
  readonly network: NetworkPlan;
  /** Why the workspace's build may not install here (no sandbox, a tenant not trusted); null when it may. */
  refusal(workspace: string): Promise<string | null>;
}

export const NO_SANDBOX_REFUSAL =
  'this gateway has no sandbox for builds (SANDBOX) and builds only its own organisation\u2019s; ' +
  'TRUST_ALL_TENANTS=1 builds every organisation';
const NO_NETWORK_REFUSAL =
  'this gateway has no network of their own for builds (SANDBOX_NETWORK) and builds only its own organisation\u2019s; ' +
  'TRUST_ALL_TENANTS=1 builds every organisation';

export function buildSandbox(
  settings: { readonly sandbox: SandboxSetting; readonly trustAllTenants: boolean },
  keys: Pick<KeyRegistry, 'workspaceOrg'>,
  probed: NetworkProbe,
  allow: readonly string[] = [],
): BuildSandbox {
  const { mode } = probeSandbox(settings.sandbox);
  // Without bwrap a step would be root of its namespace, able to route anywhere again: the host's network.
  const network: NetworkPlan = { mode: mode === 'bwrap' ? probed.mode : 'host', allow };
  return {
    mode,
    network,
    async refusal(workspace) {
      if ((mode === 'bwrap' && network.mode !== 'host') || settings.trustAllTenants) return null;
      if ((await keys.workspaceOrg(workspace)) === DEFAULT_ORG) return null;
      return mode === 'bwrap' ? NO_NETWORK_REFUSAL : NO_SANDBOX_REFUSAL;
    },
  };
}
