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

/** Where the registry is, as the start banner needs it. */
export interface RegistryPlace {
  readonly kind: 'memory' | 'redis';
  /** Its key prefix in Redis (API_KEYS_PREFIX, under REDIS_PREFIX). */
  readonly prefix: string;
}

/**
 * What boot prints (on stdout, never through the logger: log lines are kept and shipped), or null. It never suggests
 * a command that would fail: `gateway keys create` writes to Redis, so it is offered only with a registry there.
 * A development start that made no key on a Redis registry says why in one line (it holds keys already).
 */
export function developmentKeyBanner(
  dev: DevelopmentKey | null,
  registry: RegistryPlace,
  development: boolean,
): string | null {
  const more = `gateway keys create --org <org> --workspace <workspace>`;
  if (dev === null) {
    if (!development || registry.kind !== 'redis') return null;
    return `No development API key printed: the key registry in Redis (prefix "${registry.prefix}") already holds keys; create one with: ${more}`;
  }
  return [
    'Development API key (shown once, only its hash is stored):',
    `  X-Api-Key: ${dev.key}`,
    `  X-Tenant-Id: ${dev.workspace}    (organisation "${dev.org}")`,
    registry.kind === 'redis'
      ? `Create more with: ${more}`
      : `The key registry is in this process's memory: this is its only key, gone at a restart. For more keys, start with REDIS_URL and run: ${more}`,
  ].join('\n');
}

/** The banner of a key just made, wherever the registry is (its last line names the way to more keys). */
export function describeDevelopmentKey(
  dev: DevelopmentKey,
  registry: RegistryPlace = { kind: 'redis', prefix: 'keys' },
): string {
  return developmentKeyBanner(dev, registry, true)!;
}
