import { ApiError } from '../../errors.ts';
import { quotaExceeded } from '../../../shared/quota-error.ts';
import type { AgentQuotas } from '../../quotas.ts';
import { valueBytes, type ItemLimits, type ItemRefusal } from '../../store/item-quota.ts';

/**
 * Issue 25, "store items up to 10 MiB each with no quota grow the gateway's heap": one item's value is bounded
 * (413), and the items and bytes of the server and of each custom-auth user (409, counted by the item store).
 */
export function checkValueSize(value: unknown, quotas: AgentQuotas): void {
  const bytes = valueBytes(value);
  if (bytes <= quotas.maxStoreValueBytes) return;
  throw new ApiError(
    413,
    `Store item too large (store_value_bytes): its value is ${bytes} bytes as JSON, more than MAX_STORE_VALUE_BYTES (${quotas.maxStoreValueBytes}) allows. Split it over several keys, or ask the operator to raise MAX_STORE_VALUE_BYTES.`,
  );
}

export function itemLimits(quotas: AgentQuotas): ItemLimits {
  return {
    items: quotas.maxStoreItems,
    bytes: quotas.maxStoreBytes,
    userItems: quotas.maxStoreItemsPerUser,
    userBytes: quotas.maxStoreBytesPerUser,
  };
}

const SETTING: Readonly<Record<ItemRefusal['limit'], string>> = {
  store_items: 'MAX_STORE_ITEMS',
  store_bytes: 'MAX_STORE_BYTES',
  store_items_per_user: 'MAX_STORE_ITEMS_PER_USER',
  store_bytes_per_user: 'MAX_STORE_BYTES_PER_USER',
};

/** 409 naming the limit a put met, what is in use, and the setting that raises it. */
export function storeQuotaError(refused: ItemRefusal, owner: string | null): ApiError {
  const setting = SETTING[refused.limit];
  const whose = refused.limit.endsWith('_per_user') ? `user ${owner}` : 'this server';
  const what = refused.limit.startsWith('store_items') ? 'items' : 'bytes of item values';
  return quotaExceeded(
    refused.limit,
    `${whose} holds ${refused.used} ${what}; ${setting} allows ${refused.max}. Delete items (DELETE /store/items), or ask the operator to raise ${setting}.`,
  );
}
