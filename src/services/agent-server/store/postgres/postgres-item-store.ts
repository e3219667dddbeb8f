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
import type pg from 'pg';
import {
  refusal,
  ttlMs,
  valueBytes,
  type CountedItemStore,
  type ItemLimits,
  type ItemRefusal,
  type ItemStoreClock,
  type ItemUsage,
} from '../item-quota.ts';
import { conditionHolds, matches } from '../item-match.ts';
import { inTransaction } from './pool.ts';

/**
 * LangGraph's long-term memory (a BaseStore: a graph's `config.store`, clients' `/store/items`) in PostgreSQL, with
 * InMemoryStore's semantics, one row per item in `agent_items` (migrations.ts).
 *
 * Our own table, not the PostgresStore of `@langchain/langgraph-checkpoint-postgres`: that store has TTLs but no
 * owner of an item nor counts, so a quota would be a scan, and checking it in the same step as the write would need
 * our own locking around its statements anyway; its filters and ordering also differ in details from InMemoryStore's,
 * which this server answers as (item-match.ts). Here the counts are kept by a trigger in the transaction of every
 * write (whoever writes: a client, a graph, a sweep), and `putWithin` locks the server's count row, reads the counts
 * and the item it replaces, checks (item-quota.ts `refusal`) and writes in one transaction: servers sharing the
 * database never store past a limit together.
 *
 * TTLs are kept in milliseconds on the store's clock (`now`, Date.now unless a test gives its own): an item past its
 * expiry is never read, searched, listed or counted (every call sweeps first, and a read skips what ran out since),
 * and the server sweeps periodically. Search filters the items under the namespace prefix in this process, in namespace and key
 * order, without a score (no semantic search, as the memory and Redis stores).
 */
interface ItemRow {
  namespace: string[];
  key: string;
  value: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

const LIVE = '(expires_at IS NULL OR expires_at > $1)';

export class PostgresItemStore extends BaseStore implements CountedItemStore {
  private readonly now: () => number;

  constructor(
    private readonly pool: pg.Pool,
    { now = Date.now }: ItemStoreClock = {},
  ) {
    super();
    this.now = now;
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
    const bytes = valueBytes(value);
    const ttl = ttlMs(ttlMinutes);
    return inTransaction(this.pool, async (client) => {
      const now = this.now();
      await client.query('DELETE FROM agent_items WHERE expires_at <= $1', [now]);
      // The server's count row, locked: every counted put waits here for the one before it.
      await client.query("INSERT INTO agent_item_usage VALUES ('', 0, 0) ON CONFLICT (scope) DO NOTHING");
      const all = await usageRow(client, '', true);
      const mine = owner === null ? null : await usageRow(client, `u:${owner}`, false);
      const { rows } = await client.query<{ bytes: string; owner: string | null }>(
        'SELECT bytes, owner FROM agent_items WHERE namespace = $1 AND key = $2',
        [namespace, key],
      );
      const old = rows[0] === undefined ? null : { bytes: Number(rows[0].bytes), owner: rows[0].owner };
      const refused = refusal({ old, all, mine }, bytes, owner, limits);
      if (refused !== null) return refused;
      await upsert(client, namespace, key, value, bytes, owner, ttl, now);
      return null;
    });
  }

  async usage(owner?: string): Promise<ItemUsage> {
    await this.sweep();
    return usageRow(this.pool, owner === undefined ? '' : `u:${owner}`, false);
  }

  async refreshTtl(items: readonly { namespace: string[]; key: string }[]): Promise<void> {
    const now = this.now();
    for (const { namespace, key } of items)
      await this.pool.query(
        `UPDATE agent_items SET expires_at = $1 + ttl_ms
         WHERE namespace = $2 AND key = $3 AND ttl_ms IS NOT NULL AND expires_at > $1`,
        [now, namespace, key],
      );
  }

  async sweep(): Promise<number> {
    const { rowCount } = await this.pool.query('DELETE FROM agent_items WHERE expires_at <= $1', [this.now()]);
    return rowCount ?? 0;
  }

  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    for (const op of operations) if ('value' in op) validateNamespace(op.namespace, { allowReservedRoot: true });
    // Every call sweeps first (an indexed delete of the items with a TTL that ran out), as the memory store does.
    await this.sweep();
    const results: unknown[] = [];
    for (const op of operations) results.push(await this.run(op));
    return results as OperationResults<Op>;
  }

  private run(op: Operation): Promise<unknown> {
    if ('namespacePrefix' in op) return this.searchItems(op);
    if ('value' in op) return this.write(op);
    if ('key' in op) return this.read(op);
    return this.namespaces(op);
  }

  private async read({ namespace, key }: GetOperation): Promise<Item | null> {
    const { rows } = await this.pool.query<ItemRow>(
      `SELECT namespace, key, value, created_at, updated_at FROM agent_items WHERE ${LIVE} AND namespace = $2 AND key = $3`,
      [this.now(), namespace, key],
    );
    return rows[0] === undefined ? null : toItem(rows[0]);
  }

  private async write({ namespace, key, value }: PutOperation): Promise<null> {
    if (value === null) {
      await this.pool.query('DELETE FROM agent_items WHERE namespace = $1 AND key = $2', [namespace, key]);
      return null;
    }
    // A graph's own write (`config.store`): counted, for nobody, under no limit, without a TTL.
    await upsert(this.pool, namespace, key, value, valueBytes(value), null, null, this.now());
    return null;
  }

  private async searchItems({
    namespacePrefix,
    filter,
    limit = 10,
    offset = 0,
  }: SearchOperation): Promise<SearchItem[]> {
    const params: unknown[] = [this.now()];
    let under = '';
    if (namespacePrefix.length > 0) {
      params.push(namespacePrefix);
      under = ` AND namespace[1:${namespacePrefix.length}] = $2`;
    }
    const { rows } = await this.pool.query<ItemRow>(
      `SELECT namespace, key, value, created_at, updated_at FROM agent_items WHERE ${LIVE}${under}
       ORDER BY namespace, key`,
      params,
    );
    const found: SearchItem[] = [];
    for (const row of rows)
      if (filter === undefined || Object.entries(filter).every(([field, wanted]) => matches(row.value[field], wanted)))
        found.push({ ...toItem(row), score: undefined });
    return found.slice(offset, offset + limit);
  }

  private async namespaces({
    matchConditions = [],
    maxDepth,
    limit,
    offset = 0,
  }: ListNamespacesOperation): Promise<string[][]> {
    const { rows } = await this.pool.query<{ namespace: string[] }>(
      `SELECT DISTINCT namespace FROM agent_items WHERE ${LIVE}`,
      [this.now()],
    );
    let namespaces = rows
      .map((r) => r.namespace)
      .filter((ns) => matchConditions.every((condition) => conditionHolds(condition, ns)));
    if (maxDepth !== undefined)
      namespaces = [
        ...new Map(namespaces.map((ns) => ns.slice(0, maxDepth)).map((ns) => [JSON.stringify(ns), ns])).values(),
      ];
    namespaces.sort((a, b) => a.join('.').localeCompare(b.join('.')));
    return namespaces.slice(offset, limit === undefined ? undefined : offset + limit);
  }
}

type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

async function usageRow(db: Queryable, scope: string, lock: boolean): Promise<ItemUsage> {
  const { rows } = await db.query<{ items: string; bytes: string }>(
    `SELECT items, bytes FROM agent_item_usage WHERE scope = $1${lock ? ' FOR UPDATE' : ''}`,
    [scope],
  );
  return { items: Number(rows[0]?.items ?? 0), bytes: Number(rows[0]?.bytes ?? 0) };
}

/** Writes the item (created_at kept when it is there), as `owner`'s, expiring `ttl` ms from `now` (null: never). */
async function upsert(
  db: Queryable,
  namespace: string[],
  key: string,
  value: Record<string, unknown>,
  bytes: number,
  owner: string | null,
  ttl: number | null,
  now: number,
): Promise<void> {
  await db.query(
    `INSERT INTO agent_items (namespace, key, value, created_at, updated_at, bytes, owner, ttl_ms, expires_at)
     VALUES ($1, $2, $3, $4, $4, $5, $6, $7, $8)
     ON CONFLICT (namespace, key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at,
       bytes = EXCLUDED.bytes, owner = EXCLUDED.owner, ttl_ms = EXCLUDED.ttl_ms, expires_at = EXCLUDED.expires_at`,
    [namespace, key, JSON.stringify(value), new Date(now), bytes, owner, ttl, ttl === null ? null : now + ttl],
  );
}

function toItem(row: ItemRow): Item {
  return {
    namespace: row.namespace,
    key: row.key,
    value: row.value,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}
