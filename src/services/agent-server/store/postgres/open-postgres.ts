import type { Logger } from 'pino';
import type { AgentStorage } from '../open-storage.ts';
import { migrate } from './migrations.ts';
import { AgentPostgresSaver } from './postgres-checkpointer.ts';
import { PostgresAgentStore } from './postgres-agent-store.ts';
import { PostgresItemStore } from './postgres-item-store.ts';
import { createPool } from './pool.ts';

export interface PostgresStorageOptions {
  /** DATABASE_URI. */
  readonly uri: string;
  /** DATABASE_POOL_SIZE: most connections this server opens. */
  readonly poolSize: number;
  /** Schema of the tables; default `public`. */
  readonly schema?: string;
  readonly log: Logger;
}

/**
 * Everything durable of an Agent Server in one PostgreSQL database: records, store items and checkpoints share one
 * bounded pool, which the record store owns (the server closes it last, as it closes its store). The schema is
 * migrated first (migrations.ts, under an advisory lock): a database that cannot be reached throws here, at start.
 */
export async function openPostgresStorage({
  uri,
  poolSize,
  schema = 'public',
  log,
}: PostgresStorageOptions): Promise<Omit<AgentStorage, 'relay'>> {
  const pool = createPool(uri, {
    size: poolSize,
    schema,
    onError: (err) => log.warn({ err: err.message }, 'postgres connection lost while idle'),
  });
  const checkpointer = new AgentPostgresSaver(pool, schema);
  try {
    const applied = await migrate(uri, schema, () => checkpointer.setup());
    if (applied.length > 0) log.info({ migrations: applied }, 'agent server database migrated');
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
  const store = new PostgresAgentStore(pool, { ownsPool: true });
  return { store, checkpointer, items: new PostgresItemStore(pool), close: () => store.close() };
}
