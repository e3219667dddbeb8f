import { isStudioUser } from './auth/custom-handlers.ts';
import type { AuthUser } from './auth/user.ts';

/**
 * What one Agent Server (one deployment) and each of its users may hold, so neither a user nor the deployment
 * exhausts what the host shares. Each is a setting (settings.ts); going over answers a 4xx saying which limit
 * (../shared/quota-error.ts). Per-user limits count the authenticated identity of the app's custom auth; without it
 * every caller is the key's owner, and only the server's limits apply.
 */
export interface AgentQuotas {
  /** MAX_CRONS: crons on this server. */
  readonly maxCrons: number;
  /** MAX_CRONS_PER_USER: crons one user (custom auth) created. */
  readonly maxCronsPerUser: number;
  /** MIN_CRON_INTERVAL_SECONDS: the shortest time a schedule may leave between two runs. */
  readonly minCronIntervalSeconds: number;
  /** MAX_STORE_ITEMS: store items on this server. */
  readonly maxStoreItems: number;
  /** MAX_STORE_BYTES: bytes of their values (as JSON) on this server. */
  readonly maxStoreBytes: number;
  /** MAX_STORE_ITEMS_PER_USER: items one user (custom auth) last wrote. */
  readonly maxStoreItemsPerUser: number;
  /** MAX_STORE_BYTES_PER_USER: bytes of those items. */
  readonly maxStoreBytesPerUser: number;
  /** MAX_STORE_VALUE_BYTES: one item's value, as JSON; larger answers 413. */
  readonly maxStoreValueBytes: number;
}

const MiB = 1024 * 1024;

export const DEFAULT_AGENT_QUOTAS: AgentQuotas = Object.freeze({
  maxCrons: 100,
  maxCronsPerUser: 10,
  minCronIntervalSeconds: 60,
  maxStoreItems: 100_000,
  maxStoreBytes: 1024 * MiB,
  maxStoreItemsPerUser: 10_000,
  maxStoreBytesPerUser: 100 * MiB,
  maxStoreValueBytes: MiB,
});

/**
 * Whom a user's crons and items count against: the identity custom auth gave, or null for the key's owner and the
 * design studio's user (the deployment's own developer, held by the server's limits only).
 */
export function quotaOwner(user: AuthUser): string | null {
  return user.kind === 'api_key' || isStudioUser(user) ? null : user.identity;
}
