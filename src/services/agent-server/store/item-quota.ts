import type { BaseStore } from '@langchain/langgraph-checkpoint';

/**
 * Store items counted as they are written, so a quota is checked without a scan: the server's items and bytes, and
 * each owner's (the user whose put last wrote the item; graphs' own writes have no owner). The memory, Redis and
 * PostgreSQL item stores keep the counters in the same atomic step as the write or delete (one contract suite covers
 * them all).
 */
export interface ItemLimits {
  readonly items: number;
  readonly bytes: number;
  readonly userItems: number;
  readonly userBytes: number;
}

export interface ItemUsage {
  readonly items: number;
  readonly bytes: number;
}

export type ItemQuotaName = 'store_items' | 'store_bytes' | 'store_items_per_user' | 'store_bytes_per_user';

/** A put a limit refused: which, what was in use before it, and the limit. */
export interface ItemRefusal {
  readonly limit: ItemQuotaName;
  readonly used: number;
  readonly max: number;
}

export interface CountedItemStore extends BaseStore {
  /**
   * Stores the item as `owner`'s (null: nobody's) unless that takes the server or the owner past a limit: then
   * nothing is written and the answer says which. A put that does not grow a count (replacing an item by one no
   * larger) always passes, so a store over a lowered limit can still be trimmed.
   */
  putWithin(
    namespace: string[],
    key: string,
    value: Record<string, unknown>,
    owner: string | null,
    limits: ItemLimits,
    /** Minutes until the item expires (fractions allowed); null or absent: never. */
    ttlMinutes?: number | null,
  ): Promise<ItemRefusal | null>;
  /** The server's counts, or with `owner` that owner's. */
  usage(owner?: string): Promise<ItemUsage>;
  /** Starts the TTL of each of these items (those that have one) again from now: `refresh_ttl` on a read. */
  refreshTtl(items: readonly { namespace: string[]; key: string }[]): Promise<void>;
  /**
   * Deletes the items whose TTL has run out, with their counts; how many. Every read, write and count sweeps first
   * (an expired item is never seen nor counted); the server also calls it periodically, so memory is given back.
   */
  sweep(): Promise<number>;
}

/** Options of both item stores. */
export interface ItemStoreClock {
  /** Milliseconds since the epoch; tests pass their own clock so TTLs run out without waiting. */
  readonly now?: () => number;
}

/** A TTL in minutes as milliseconds, or null for none (absent, null, or not above zero). */
export function ttlMs(ttlMinutes: number | null | undefined): number | null {
  return ttlMinutes == null || !(ttlMinutes > 0) ? null : Math.max(1, Math.round(ttlMinutes * 60_000));
}

/** What an item's value weighs: its JSON in UTF-8, as stored. */
export function valueBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}

/** What an item counts for: its bytes and its owner. */
export interface ItemEntry {
  readonly bytes: number;
  readonly owner: string | null;
}

/** What a put is checked against: the item it replaces (null: none), the server's counts and the owner's (null: no owner). */
export interface ItemCounts {
  readonly old: ItemEntry | null;
  readonly all: ItemUsage;
  readonly mine: ItemUsage | null;
}

/**
 * The refusal a put of `bytes` by `owner` meets, or null: every store checks with this, over counts it read in the
 * same atomic step as the write.
 */
export function refusal(
  { old, all, mine }: ItemCounts,
  bytes: number,
  owner: string | null,
  limits: ItemLimits,
): ItemRefusal | null {
  if (old === null && all.items + 1 > limits.items) return { limit: 'store_items', used: all.items, max: limits.items };
  const bytesAfter = all.bytes - (old?.bytes ?? 0) + bytes;
  if (bytesAfter > limits.bytes && bytesAfter > all.bytes)
    return { limit: 'store_bytes', used: all.bytes, max: limits.bytes };
  if (owner === null || mine === null) return null;
  const same = old !== null && old.owner === owner;
  if (!same && mine.items + 1 > limits.userItems)
    return { limit: 'store_items_per_user', used: mine.items, max: limits.userItems };
  const mineAfter = mine.bytes - (same ? old.bytes : 0) + bytes;
  if (mineAfter > limits.userBytes && mineAfter > mine.bytes)
    return { limit: 'store_bytes_per_user', used: mine.bytes, max: limits.userBytes };
  return null;
}

/** The counters of a store held in this process (memory-item-store.ts); each call is one synchronous step. */
export class ItemLedger {
  private readonly entries = new Map<string, ItemEntry>();
  private readonly totals = new Map<string | null, { items: number; bytes: number }>();

  /** The refusal a put of `bytes` by `owner` meets, or null. */
  check(namespace: string[], key: string, bytes: number, owner: string | null, limits: ItemLimits): ItemRefusal | null {
    const old = this.entries.get(id(namespace, key)) ?? null;
    return refusal(
      { old, all: this.usage(null), mine: owner === null ? null : this.usage(owner) },
      bytes,
      owner,
      limits,
    );
  }

  /** Counts a put (`bytes`) or a delete (null). */
  record(namespace: string[], key: string, bytes: number | null, owner: string | null): void {
    const k = id(namespace, key);
    const old = this.entries.get(k);
    if (old !== undefined) {
      this.add(null, -1, -old.bytes);
      if (old.owner !== null) this.add(old.owner, -1, -old.bytes);
      this.entries.delete(k);
    }
    if (bytes === null) return;
    this.entries.set(k, { bytes, owner });
    this.add(null, 1, bytes);
    if (owner !== null) this.add(owner, 1, bytes);
  }

  usage(owner: string | null): ItemUsage {
    const t = this.totals.get(owner);
    return { items: t?.items ?? 0, bytes: t?.bytes ?? 0 };
  }

  private add(owner: string | null, items: number, bytes: number): void {
    const t = this.totals.get(owner) ?? { items: 0, bytes: 0 };
    t.items += items;
    t.bytes += bytes;
    if (owner !== null && t.items === 0) this.totals.delete(owner);
    else this.totals.set(owner, t);
  }
}

function id(namespace: string[], key: string): string {
  return JSON.stringify([namespace, key]);
}
