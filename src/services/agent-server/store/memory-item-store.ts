import {
  InMemoryStore,
  validateNamespace,
  type Operation,
  type OperationResults,
} from '@langchain/langgraph-checkpoint';
import {
  ItemLedger,
  valueBytes,
  type CountedItemStore,
  type ItemLimits,
  type ItemRefusal,
  type ItemUsage,
} from './item-quota.ts';

/**
 * LangGraph's InMemoryStore with counters (item-quota.ts): every put and delete, a graph's through `config.store` as
 * much as a client's, is counted in the same synchronous step that queues it, so the counts never drift from the
 * items and a quota check is a lookup.
 */
export class MemoryItemStore extends InMemoryStore implements CountedItemStore {
  private readonly ledger = new ItemLedger();

  override async batch<Op extends readonly Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    // Checked before counting: a namespace InMemoryStore refuses must not be counted.
    for (const op of operations) if ('value' in op) validateNamespace(op.namespace, { allowReservedRoot: true });
    for (const op of operations)
      if ('value' in op)
        this.ledger.record(op.namespace, op.key, op.value === null ? null : valueBytes(op.value), null);
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
  ): Promise<ItemRefusal | null> {
    validateNamespace(namespace);
    const bytes = valueBytes(value);
    const refused = this.ledger.check(namespace, key, bytes, owner, limits);
    if (refused !== null) return refused;
    this.ledger.record(namespace, key, bytes, owner);
    // Past this class's batch: counted above, with its owner.
    await super.batch([{ namespace, key, value }]);
    return null;
  }

  async usage(owner?: string): Promise<ItemUsage> {
    return this.ledger.usage(owner ?? null);
  }
}
