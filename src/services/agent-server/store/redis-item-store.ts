import {
  BaseStore,
  validateNamespace,
  type GetOperation,
  type Item,
  type ListNamespacesOperation,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchItem,
  type SearchOperation,
} from '@langchain/langgraph-checkpoint';
import type { Redis } from 'ioredis';
import { isFunctionMissing, ITEM_FUNCTIONS, loadItemFunctions } from './item-functions.ts';
import {
  ttlMs,
  valueBytes,
  type CountedItemStore,
  type ItemLimits,
  type ItemRefusal,
  type ItemStoreClock,
  type ItemUsage,
} from './item-quota.ts';
import { conditionHolds, matches, startsWith } from './item-match.ts';

/**
 * LangGraph's long-term memory (a BaseStore: what graphs reach as
 * `config.store` and clients through `/store/items`) in plain Redis, with
 * InMemoryStore's semantics, so what an agent remembers outlives the
 * process. Keys, under `<prefix>:items:`, where `<ns>` is the namespace as
 * JSON (`["users","u1"]`):
 *
 *   namespaces    sorted set (all scores 0) of the namespaces holding items
 *   values:<ns>   hash key → JSON {value, updated_at}
 *   created:<ns>  hash key → ISO time of the item's first put
 *   sizes:<ns>    hash key → `<bytes> <owner>`: what the item counts for (item-quota.ts)
 *   usage         hash: items, bytes, items:<owner>, bytes:<owner>
 *   expiry        sorted set of the items with a TTL (JSON [ns, key]), scored by when they expire (ms)
 *   ttls          hash JSON [ns, key] → the item's TTL (ms), to start it again on a read (`refresh_ttl`)
 *
 * Every put and delete goes through item-put.lua or item-delete.lua (as Redis
 * Functions, item-functions.ts: no EVAL), which keep the counts in the same step (items written before there were counts
 * are not counted until written again). Expired items are swept (through
 * item-delete.lua, so their counts go with them) before every counted write
 * and count, when a read finds any (batch()), and periodically by the server.
 *
 * Semantic search (`query` over an embeddings index) is not supported: a
 * search answers the items under the prefix that pass the filter, in
 * namespace and key order, without a score.
 */
export interface RedisItemStoreOptions extends ItemStoreClock {
  /** Key prefix; default `agent` (the keys sit under `<prefix>:items:`). */
  readonly prefix?: string;
}

interface StoredValue {
  readonly value: Record<string, unknown>;
  readonly updated_at: string;
}

/** Items removed per sweep round trip. */
const SWEEP_BATCH = 200;

type ItemScript = (...args: (string | number)[]) => Promise<unknown>;

export class RedisItemStore extends BaseStore implements CountedItemStore {
  private readonly base: string;
  private readonly putScript: ItemScript;
  private readonly deleteScript: ItemScript;
  private readonly refreshScript: ItemScript;
  private readonly now: () => number;

  constructor(
    private readonly client: Redis,
    { prefix = 'agent', now = Date.now }: RedisItemStoreOptions = {},
  ) {
    super();
    this.base = `${prefix}:items:`;
    this.now = now;
    this.putScript = this.fcall(ITEM_FUNCTIONS.put, 7);
    this.deleteScript = this.fcall(ITEM_FUNCTIONS.delete, 7);
    this.refreshScript = this.fcall(ITEM_FUNCTIONS.refresh, 2);
  }

  /**
   * FCALL of one of the library's functions; when Redis has not got it (never loaded, or restarted), loads it and
   * calls again. Loading needs the platform's user: a deployment's user is refused, and gets the first error (its
   * control plane loads the library before the revision starts, and again after a Redis restart).
   */
  private fcall(name: string, numberOfKeys: number): ItemScript {
    return async (...args) => {
      const call = () => this.client.call('FCALL', name, numberOfKeys, ...args);
      try {
        return await call();
      } catch (err) {
        if (!isFunctionMissing(err)) throw err;
        await loadItemFunctions(this.client).catch(() => {
          throw err;
        });
        return call();
      }
    };
  }

  async refreshTtl(items: readonly { namespace: string[]; key: string }[]): Promise<void> {
    if (items.length === 0) return;
    const members = items.map(({ namespace, key }) => JSON.stringify([namespace, key]));
    await this.refreshScript(this.k('expiry'), this.k('ttls'), this.now(), ...members);
  }

  async sweep(): Promise<number> {
    let swept = 0;
    for (;;) {
      const now = this.now();
      const due = await this.client.zrangebyscore(this.k('expiry'), '-inf', now, 'LIMIT', 0, SWEEP_BATCH);
      for (const member of due) {
        const [namespace, key] = JSON.parse(member) as [string[], string];
        const ns = JSON.stringify(namespace);
        swept += Number(await this.deleteScript(...this.itemKeys(ns), key, ns, member, now));
      }
      if (due.length < SWEEP_BATCH) return swept;
    }
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
    const answer = await this.store(namespace, key, value, owner, limits, ttlMs(ttlMinutes));
    if (answer === 0) return null;
    const [limit, used, max] = answer as [ItemRefusal['limit'], number, string];
    return { limit, used: Number(used), max: Number(max) };
  }

  async usage(owner?: string): Promise<ItemUsage> {
    await this.sweep();
    const fields = owner === undefined ? ['items', 'bytes'] : [`items:${owner}`, `bytes:${owner}`];
    const [items, bytes] = await this.client.hmget(this.k('usage'), ...fields);
    return { items: Number(items ?? 0), bytes: Number(bytes ?? 0) };
  }

  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    // Whether anything has expired is asked alongside the operations, in the same round trip; only when something
    // has are the expired items swept and the operations run again, so no expired item is ever answered (a put or a
    // delete run twice leaves what running it once does).
    const [due, results] = await Promise.all([this.anyDue(), this.runAll(operations)]);
    if (!due) return results;
    await this.sweep();
    return this.runAll(operations);
  }

  private async runAll<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const results: unknown[] = [];
    for (const op of operations) results.push(await this.run(op));
    return results as OperationResults<Op>;
  }

  private async anyDue(): Promise<boolean> {
    return (await this.client.zrangebyscore(this.k('expiry'), '-inf', this.now(), 'LIMIT', 0, 1)).length > 0;
  }

  private run(op: Operation): Promise<unknown> {
    if ('namespacePrefix' in op) return this.searchItems(op);
    if ('value' in op) return this.write(op);
    if ('key' in op) return this.read(op);
    return this.namespaces(op);
  }

  private async read({ namespace, key }: GetOperation): Promise<Item | null> {
    const ns = JSON.stringify(namespace);
    const [stored, created] = await Promise.all([
      this.client.hget(this.k(`values:${ns}`), key),
      this.client.hget(this.k(`created:${ns}`), key),
    ]);
    return stored === null ? null : toItem(namespace, key, JSON.parse(stored) as StoredValue, created);
  }

  private async write({ namespace, key, value }: PutOperation): Promise<null> {
    const ns = JSON.stringify(namespace);
    if (value === null) await this.deleteScript(...this.itemKeys(ns), key, ns, JSON.stringify([namespace, key]), '');
    // A graph's own write (`config.store`): counted, for nobody, under no limit, without a TTL.
    else await this.store(namespace, key, value, null, null, null);
    return null;
  }

  private store(
    namespace: string[],
    key: string,
    value: Record<string, unknown>,
    owner: string | null,
    limits: ItemLimits | null,
    ttl: number | null,
  ): Promise<unknown> {
    const ns = JSON.stringify(namespace);
    const nowMs = this.now();
    const now = new Date(nowMs).toISOString();
    const stored = JSON.stringify({ value, updated_at: now } satisfies StoredValue);
    const max = (n: number | undefined) => (n === undefined || !Number.isFinite(n) ? -1 : n);
    return this.putScript(
      ...this.itemKeys(ns),
      key,
      ns,
      stored,
      now,
      valueBytes(value),
      owner ?? '',
      max(limits?.items),
      max(limits?.bytes),
      max(limits?.userItems),
      max(limits?.userBytes),
      JSON.stringify([namespace, key]),
      ttl ?? '',
      nowMs,
    );
  }

  /** KEYS of item-put.lua and item-delete.lua for the namespace `ns` (JSON). */
  private itemKeys(ns: string): string[] {
    return [
      this.k(`values:${ns}`),
      this.k(`created:${ns}`),
      this.k('namespaces'),
      this.k(`sizes:${ns}`),
      this.k('usage'),
      this.k('expiry'),
      this.k('ttls'),
    ];
  }

  private async searchItems({
    namespacePrefix,
    filter,
    limit = 10,
    offset = 0,
  }: SearchOperation): Promise<SearchItem[]> {
    const found: SearchItem[] = [];
    for (const namespace of await this.allNamespaces()) {
      if (!startsWith(namespace, namespacePrefix)) continue;
      const ns = JSON.stringify(namespace);
      const [values, created] = await Promise.all([
        this.client.hgetall(this.k(`values:${ns}`)),
        this.client.hgetall(this.k(`created:${ns}`)),
      ]);
      for (const key of Object.keys(values).sort()) {
        const item = toItem(namespace, key, JSON.parse(values[key]!) as StoredValue, created[key] ?? null);
        if (
          filter === undefined ||
          Object.entries(filter).every(([field, wanted]) => matches(item.value[field], wanted))
        )
          found.push({ ...item, score: undefined });
      }
    }
    return found.slice(offset, offset + limit);
  }

  private async namespaces({
    matchConditions = [],
    maxDepth,
    limit,
    offset = 0,
  }: ListNamespacesOperation): Promise<string[][]> {
    let namespaces = (await this.allNamespaces()).filter((ns) =>
      matchConditions.every((condition) => conditionHolds(condition, ns)),
    );
    if (maxDepth !== undefined)
      namespaces = [
        ...new Map(namespaces.map((ns) => ns.slice(0, maxDepth)).map((ns) => [JSON.stringify(ns), ns])).values(),
      ];
    namespaces.sort((a, b) => a.join('.').localeCompare(b.join('.')));
    return namespaces.slice(offset, limit === undefined ? undefined : offset + limit);
  }

  /** Every namespace holding items, in the index's (JSON) order. */
  private async allNamespaces(): Promise<string[][]> {
    return (await this.client.zrange(this.k('namespaces'), 0, -1)).map((ns) => JSON.parse(ns) as string[]);
  }

  private k(suffix: string): string {
    return this.base + suffix;
  }
}

function toItem(namespace: string[], key: string, stored: StoredValue, created: string | null): Item {
  return {
    namespace,
    key,
    value: stored.value,
    createdAt: new Date(created ?? stored.updated_at),
    updatedAt: new Date(stored.updated_at),
  };
}
