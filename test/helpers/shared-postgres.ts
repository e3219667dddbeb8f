import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createPool } from '../../src/services/agent-server/store/postgres/pool.ts';
import { migrate } from '../../src/services/agent-server/store/postgres/migrations.ts';
import { AgentPostgresSaver } from '../../src/services/agent-server/store/postgres/postgres-checkpointer.ts';

/**
 * The machine's PostgreSQL, shared with every other test run (and other people's work): a test file makes a database
 * of its own (`gw_t_<random>`) and drops it afterwards; nothing else on the server is touched. A test that must stop
 * or restart its server starts a private cluster (support/private-postgres.ts). TEST_DATABASE_URL points the suite at
 * another shared server (a superuser's URL, or one allowed CREATE DATABASE).
 */
export const SHARED_POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface OwnDatabase {
  readonly name: string;
  /** The URL of the database (the shared server's user). */
  readonly uri: string;
  /** Drops it, closing whatever connections are still open to it. */
  drop(): Promise<void>;
}

/** A fresh, empty database on `serverUrl` (default the shared server). */
export async function ownDatabase(serverUrl = SHARED_POSTGRES_URL): Promise<OwnDatabase> {
  const name = `gw_t_${randomBytes(6).toString('hex')}`;
  await adminQuery(serverUrl, `CREATE DATABASE ${name}`);
  const uri = new URL(serverUrl);
  uri.pathname = `/${name}`;
  return {
    name,
    uri: uri.href,
    drop: () => adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

async function adminQuery(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

let schemas = 0;

/**
 * A new schema of `uri`'s database, migrated, and a pool on it: the contract suites expect every store they make to
 * start empty. The pool is the caller's to end.
 */
export async function migratedSchema(uri: string, size = 4): Promise<{ pool: pg.Pool; schema: string }> {
  const schema = `s${++schemas}_${randomBytes(3).toString('hex')}`;
  const pool = createPool(uri, { size, schema });
  await migrate(uri, schema, () => new AgentPostgresSaver(pool, schema).setup());
  return { pool, schema };
}
