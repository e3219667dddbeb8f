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
  /** ADMIN_TOKEN is set: `gateway keys` reaches the registry through the admin listener, on any store. */
  readonly admin?: boolean;
}

const MORE = 'gateway keys create --org <org> --workspace <workspace>';

/**
 * What boot prints (on stdout, never through the logger: log lines are kept and shipped), or null. It never suggests
 * a command that would fail: `gateway keys create` works with the registry in Redis (REDIS_URL) or through the admin
 * listener (ADMIN_TOKEN, any store), so it is offered only then, and otherwise the banner says what makes it work.
 * When no development key is printed, one line says why.
 */
export function developmentKeyBanner(
  dev: DevelopmentKey | null,
  registry: RegistryPlace,
  development: boolean,
): string | null {
  const more = howToMore(registry);
  if (dev === null) {
    if (!development && registry.kind === 'memory' && !registry.admin)
      return 'No development API key printed: NODE_ENV=production makes none, and no key can be made (the registry is in memory, ADMIN_TOKEN unset): start with ADMIN_TOKEN=<a secret> or REDIS_URL.';
    if (!development) return `No development API key printed: NODE_ENV=production makes none. ${more}`;
    if (registry.kind === 'redis')
      return `No development API key printed: the key registry in Redis (prefix "${registry.prefix}") already holds keys. ${more}`;
    return `No development API key printed: the key registry already holds keys. ${more}`;
  }
  return [
    'Development API key (shown once, only its hash is stored):',
    `  X-Api-Key: ${dev.key}`,
    `  X-Tenant-Id: ${dev.workspace}    (organisation "${dev.org}")`,
    registry.kind === 'memory'
      ? `The key registry is in this process's memory: this key is gone at a restart. ${more}`
      : more,
  ].join('\n');
}

/** The one way to more keys that works here, or what to set for one. */
function howToMore(registry: RegistryPlace): string {
  if (registry.kind === 'redis') return `Create more with: ${MORE}`;
  if (registry.admin) return `Create more with: ${MORE}    (with this gateway's ADMIN_TOKEN in the environment)`;
  return `For more keys, start the gateway with ADMIN_TOKEN=<a secret> (then: ADMIN_TOKEN=<it> ${MORE}) or with REDIS_URL.`;
}

/** The banner of a key just made, wherever the registry is (its last line names the way to more keys). */
export function describeDevelopmentKey(
  dev: DevelopmentKey,
  registry: RegistryPlace = { kind: 'redis', prefix: 'keys' },
): string {
  return developmentKeyBanner(dev, registry, true)!;
}
