import type { KeyRegistry } from './types.ts';

export interface DevelopmentKey {
  readonly key: string;
  readonly org: string;
  readonly workspace: string;
}

export const DEFAULT_ORG = 'default';
export const DEFAULT_WORKSPACE = 'default';

/**
 * On first start of a development setup with an empty registry: one key for
 * the default organisation and workspace. Returns it once (the caller prints
 * it); every later call, and any call on a registry holding keys, returns null.
 */
export async function ensureDevelopmentKey(
  registry: KeyRegistry,
  { org = DEFAULT_ORG, workspace = DEFAULT_WORKSPACE }: { org?: string; workspace?: string } = {},
): Promise<DevelopmentKey | null> {
  if (!(await registry.claimBootstrap())) return null;
  await registry.addWorkspace(org, workspace);
  const { key } = await registry.createKey(org);
  return { key, org, workspace };
}

/** What boot prints (on stdout, never through the logger: log lines are kept and shipped). */
export function describeDevelopmentKey(dev: DevelopmentKey): string {
  return [
    'Development API key (shown once, only its hash is stored):',
    `  X-Api-Key: ${dev.key}`,
    `  X-Tenant-Id: ${dev.workspace}    (organisation "${dev.org}")`,
    'Create more with: gateway keys create --org <org> --workspace <workspace>',
  ].join('\n');
}
