import pg from 'pg';

export interface PoolOptions {
  /** Most connections the pool opens (DATABASE_POOL_SIZE). */
  readonly size: number;
  /** Schema the tables live in (every connection's `search_path`); default `public`. */
  readonly schema?: string;
  /** Told about a connection lost while idle (a PostgreSQL restart): the pool drops it and opens another on demand. */
  readonly onError?: (err: Error) => void;
}

/** A schema name as PostgreSQL quotes it. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * The Agent Server's connections to its database: at most `size`, each with the schema as its `search_path`, so the
 * store's unqualified table names land there. A query that finds no connection free waits for one (at most 10 s
 * for a new one to open). A connection lost while idle is removed (not thrown: an `error` event without a listener
 * would end the process); one lost under a query fails that query, and the next query opens a new connection.
 */
export function createPool(uri: string, { size, schema = 'public', onError }: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: uri,
    max: size,
    options: `-c search_path=${quoteIdent(schema)}`,
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
    application_name: 'agent-server',
  });
  pool.on('error', (err) => onError?.(err));
  // A connection lost while checked out between two queries emits `error` on the client itself, where the pool has
  // no listener then: heard here, so it never ends the process (the next query on it fails, and its release drops it).
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/** Runs `work` in one transaction on one connection of the pool: committed if it resolves, rolled back if it throws. */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch((rollbackErr: Error) => (broken = rollbackErr));
    throw err;
  } finally {
    // A connection that could not even roll back is dropped, not reused.
    client.release(broken);
  }
}
