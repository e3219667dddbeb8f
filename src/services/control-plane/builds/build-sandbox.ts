import { DEFAULT_ORG } from '../../../keys/bootstrap.ts';
import type { KeyRegistry } from '../../../keys/types.ts';
import { probeSandbox, type SandboxMode, type SandboxSetting } from '../../../sandbox/probe.ts';

/**
 * Where a build's `git` and `npm` run: in the bubblewrap sandbox when this host has one (SANDBOX, probed once at
 * start, as the revision host does), else as plain children of the gateway. Without a sandbox an install (its scripts
 * are the tenant's code) runs only for the gateway's own organisation unless TRUST_ALL_TENANTS says every tenant is
 * trusted: the same rule as the revision host's, applied before npm rather than at the load check after it.
 */
export interface BuildSandbox {
  readonly mode: SandboxMode;
  /** Why the workspace's build may not install here (no sandbox, a tenant not trusted); null when it may. */
  refusal(workspace: string): Promise<string | null>;
}

export const NO_SANDBOX_REFUSAL =
  'this gateway has no sandbox for builds (SANDBOX) and builds only its own organisation\u2019s; ' +
  'TRUST_ALL_TENANTS=1 builds every organisation';

export function buildSandbox(
  settings: { readonly sandbox: SandboxSetting; readonly trustAllTenants: boolean },
  keys: Pick<KeyRegistry, 'workspaceOrg'>,
): BuildSandbox {
  const { mode } = probeSandbox(settings.sandbox);
  return {
    mode,
    async refusal(workspace) {
      if (mode === 'bwrap' || settings.trustAllTenants) return null;
      return (await keys.workspaceOrg(workspace)) === DEFAULT_ORG ? null : NO_SANDBOX_REFUSAL;
    },
  };
}
