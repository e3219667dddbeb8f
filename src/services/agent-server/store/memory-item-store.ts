import {
  InMemoryStore,
  validateNamespace,
  type Operation,
  type OperationResults,
} from '@langchain/langgraph-checkpoint';
import {
  ItemLedger,
  ttlMs,
  valueBytes,
  type CountedItemStore,
  type ItemLimits,
  type ItemRefusal,
  type ItemStoreClock,
  type ItemUsage,
} from './item-quota.ts';

interface Expiry {
  readonly namespace: string[];
  readonly key: string;
  at: number;
  readonly ms: number;
}

/**
 * LangGraph's InMemoryStore with counters (item-quota.ts): every put and delete, a graph's through `config.store` as
 * much as a client's, is counted in the same synchronous step that queues it, so the counts never drift from the
 * items and a quota check is a lookup. Items put with a TTL expire: every call sweeps the expired ones first.
 */
export class MemoryItemStore extends InMemoryStore implements CountedItemStore {
  private readonly ledger = new ItemLedger();
  private readonly expiries = new Map<string, Expiry>();
  private readonly now: () => number;
  /** No item expires before this (a lower bound: a refresh only moves expiries later), so most calls skip the scan. */
  private nextExpiry = Infinity;

  constructor({ now = Date.now }: ItemStoreClock = {}) {
    super();
    this.now = now;
  }

  override async batch<Op extends readonly Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    // Checked before counting: a namespace InMemoryStore refuses must not be counted.
    for (const op of operations) if ('value' in op) validateNamespace(op.namespace, { allowReservedRoot: true });
    await this.sweep();
    for (const op of operations)
      if ('value' in op) {
        this.ledger.record(op.namespace, op.key, op.value === null ? null : valueBytes(op.value), null);
        // A graph's own put has no TTL: it replaces the item's.
        this.expiries.delete(id(op.namespace, op.key));
      }
    const results = await super.batch(operations);
    for (const op of operations) if ('value' in op && op.value === null) this.dropIfEmpty(op.namespace);
    return results;
  }

  /**
   * InMemoryStore keeps a namespace's (now empty) map after its last item is deleted, so listNamespaces would still
   * list it; the official server lists only namespaces holding items. Its map is private in the typings only.
   */
  private dropIfEmpty(namespace: string[]): void {
    const data = (this as unknown as { data: Map<string, Map<string, unknown>> }).data;
    const key = namespace.join(':');
    if (data.get(key)?.size === 0) data.delete(key);
  }

  async putWithin(
    namespace: string[],
    key: string,
    value: Record<string, unknown>,
    owner: string | null,
    limits: ItemLimits,
    ttlMinutes?: number | null,
  ): Promise<ItemRefusal | null> {
    validateNamespace(namespace);
    await this.sweep();
    const bytes = valueBytes(value);
    const refused = this.ledger.check(namespace, key, bytes, owner, limits);
    if (refused !== null) return refused;
    this.ledger.record(namespace, key, bytes, owner);
    const ms = ttlMs(ttlMinutes);
    if (ms === null) this.expiries.delete(id(namespace, key));
    else {
      const at = this.now() + ms;
      this.expiries.set(id(namespace, key), { namespace, key, at, ms });
      this.nextExpiry = Math.min(this.nextExpiry, at);
    }
    // Past this class's batch: counted above, with its owner.
    await super.batch([{ namespace, key, value }]);
    return null;
  }

  async usage(owner?: string): Promise<ItemUsage> {
    await this.sweep();
    return this.ledger.usage(owner ?? null);
  }

  async refreshTtl(items: readonly { namespace: string[]; key: string }[]): Promise<void> {
    const now = this.now();
    for (const { namespace, key } of items) {
      const expiry = this.expiries.get(id(namespace, key));
      if (expiry !== undefined && expiry.at > now) expiry.at = now + expiry.ms;
    }
  }

  async sweep(): Promise<number> {
    const now = this.now();
    if (now < this.nextExpiry) return 0;
    const gone = [...this.expiries].filter(([, e]) => e.at <= now);
    this.nextExpiry = Infinity;
    for (const e of this.expiries.values()) if (e.at > now) this.nextExpiry = Math.min(this.nextExpiry, e.at);
    for (const [k, { namespace, key }] of gone) {
      this.expiries.delete(k);
      this.ledger.record(namespace, key, null, null);
    }
    if (gone.length === 0) return 0;
    await super.batch(gone.map(([, { namespace, key }]) => ({ namespace, key, value: null })));
    for (const [, { namespace }] of gone) this.dropIfEmpty(namespace);
    return gone.length;
  }
}

function id(namespace: string[], key: string): string {
  return JSON.stringify([namespace, key]);
}
