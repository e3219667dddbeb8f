import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, MIGRATIONS } from '../../../../src/services/agent-server/store/postgres/migrations.ts';
import { AgentPostgresSaver } from '../../../../src/services/agent-server/store/postgres/postgres-checkpointer.ts';
import { PostgresAgentStore } from '../../../../src/services/agent-server/store/postgres/postgres-agent-store.ts';
import { PostgresItemStore } from '../../../../src/services/agent-server/store/postgres/postgres-item-store.ts';
import { createPool } from '../../../../src/services/agent-server/store/postgres/pool.ts';
import { migratedSchema, ownDatabase, type OwnDatabase } from '../../../helpers/shared-postgres.ts';
import { storeContract } from './agent-store-contract.ts';
import { itemQuotaContract } from './item-quota-contract.ts';
import { itemTtlContract } from './item-ttl-contract.ts';
import { threadStorageContract } from './thread-storage-contract.ts';

/**
 * The store contracts over PostgreSQL (a database of this file's own on the shared server, dropped afterwards; a
 * fresh schema per store the contracts make), and what is PostgreSQL's own: migrations under the advisory lock.
 */
let db: OwnDatabase;
const pools: pg.Pool[] = [];
beforeAll(async () => {
  db = await ownDatabase();
});
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end().catch(() => {})));
  await db?.drop();
});

async function fresh(): Promise<{ pool: pg.Pool; schema: string }> {
  const made = await migratedSchema(db.uri);
  pools.push(made.pool);
  return made;
}

storeContract('postgres', async () => new PostgresAgentStore((await fresh()).pool));

const poolOf = new WeakMap<object, { schema: string }>();
itemQuotaContract(
  'postgres',
  async () => {
    const { pool, schema } = await fresh();
    const store = new PostgresItemStore(pool);
    poolOf.set(store, { schema });
    return store;
  },
  // Another server: its own pool on the same tables.
  (store) => {
    const pool = createPool(db.uri, { size: 4, schema: poolOf.get(store)!.schema });
    pools.push(pool);
    return new PostgresItemStore(pool);
  },
);
itemTtlContract('postgres', async (now) => new PostgresItemStore((await fresh()).pool, { now }));
// PostgresSaver keeps each channel value in a row of its own (bytea of the serializer's JSON): counted as is.
threadStorageContract(
  'PostgresSaver',
  async () => {
    const { pool, schema } = await fresh();
    return new AgentPostgresSaver(pool, schema);
  },
  (n) => n,
);

describe('postgres migrations', () => {
  it('four servers starting at once on a fresh database all succeed, and each migration is applied once', async () => {
    const fresh = await ownDatabase();
    try {
      const started = await Promise.all(
        Array.from({ length: 4 }, async () => {
          const pool = createPool(fresh.uri, { size: 2 });
          try {
            return await migrate(fresh.uri, 'public', () => new AgentPostgresSaver(pool, 'public').setup());
          } finally {
            await pool.end();
          }
        }),
      );
      // Exactly one of them applied each migration; the others found it applied.
      expect(started.flat().sort()).toEqual(MIGRATIONS.map((_, i) => i + 1));
      const pool = createPool(fresh.uri, { size: 1 });
      try {
        const versions = await pool.query('SELECT version FROM agent_schema_migrations ORDER BY version');
        expect(versions.rows.map((r) => r.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
        const saverVersions = await pool.query(
          'SELECT count(*)::int AS n, count(DISTINCT v)::int AS d FROM checkpoint_migrations',
        );
        expect(saverVersions.rows[0].n).toBe(saverVersions.rows[0].d);
        expect(saverVersions.rows[0].n).toBeGreaterThan(0);
        // A fifth start later applies nothing.
        expect(await migrate(fresh.uri, 'public', () => new AgentPostgresSaver(pool, 'public').setup())).toEqual([]);
      } finally {
        await pool.end();
      }
    } finally {
      await fresh.drop();
    }
  });

  it("a claim is the first caller's only, until it expires; a lease holds whatever was there", async () => {
    const { pool } = await fresh();
    const [a, b] = [new PostgresAgentStore(pool), new PostgresAgentStore(pool)];
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => [a, b][i % 2]!.claim('cron:1', 300)));
    expect(answers.filter(Boolean)).toHaveLength(1);
    expect(await b.held('cron:1')).toBe(true);
    await new Promise((r) => setTimeout(r, 400));
    expect(await a.held('cron:1')).toBe(false);
    expect(await b.claim('cron:1', 60_000)).toBe(true);
    await a.lease('run:1', 60_000);
    expect(await b.claim('run:1', 60_000)).toBe(false);
    expect(await b.held('run:1')).toBe(true);
  });
});
