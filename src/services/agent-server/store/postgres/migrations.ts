import pg from 'pg';
import { quoteIdent } from './pool.ts';

/**
 * The Agent Server's tables, as numbered migrations: migration N is applied once, recorded in
 * `agent_schema_migrations`, never edited once released (a change is a new migration at the end). Graph state is
 * PostgresSaver's own tables (`checkpoints`, `checkpoint_blobs`, `checkpoint_writes`), migrated by its `setup()` under
 * the same lock.
 *
 * Records are JSON documents (type `json`, not `jsonb`: kept as written, `\u0000` and key order included, and nothing
 * queries inside them) with the columns the store looks them up by. Store items count themselves: a trigger
 * keeps `agent_item_usage` (scope `''` the server's, `u:<owner>` each owner's) in the transaction of every insert,
 * delete and change of size or owner, whoever writes (a client's put, a graph's, a sweep).
 */
export const MIGRATIONS: readonly string[] = [
  // 1: assistants, threads, runs, crons, leases, store items and their counts.
  `
  CREATE TABLE agent_assistants (
    assistant_id text PRIMARY KEY,
    data json NOT NULL
  );
  CREATE TABLE agent_assistant_versions (
    assistant_id text NOT NULL,
    version bigint NOT NULL,
    data json NOT NULL,
    PRIMARY KEY (assistant_id, version)
  );
  CREATE TABLE agent_threads (
    thread_id text PRIMARY KEY,
    data json NOT NULL
  );
  CREATE TABLE agent_runs (
    run_id text PRIMARY KEY,
    thread_id text NOT NULL,
    created_at text COLLATE "C" NOT NULL,
    data json NOT NULL
  );
  CREATE INDEX agent_runs_by_thread ON agent_runs (thread_id, created_at);
  CREATE TABLE agent_crons (
    cron_id text PRIMARY KEY,
    data json NOT NULL
  );
  CREATE TABLE agent_leases (
    key text PRIMARY KEY,
    expires_at timestamptz NOT NULL
  );
  CREATE INDEX agent_leases_by_expiry ON agent_leases (expires_at);
  CREATE TABLE agent_items (
    namespace text[] COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    value json NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    bytes bigint NOT NULL,
    owner text,
    ttl_ms bigint,
    expires_at bigint,
    PRIMARY KEY (namespace, key)
  );
  CREATE INDEX agent_items_by_expiry ON agent_items (expires_at) WHERE expires_at IS NOT NULL;
  CREATE TABLE agent_item_usage (
    scope text PRIMARY KEY,
    items bigint NOT NULL,
    bytes bigint NOT NULL
  );
  CREATE FUNCTION agent_items_count() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
      UPDATE agent_item_usage SET items = items - 1, bytes = bytes - OLD.bytes
        WHERE scope = '' OR scope = 'u:' || OLD.owner;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
      INSERT INTO agent_item_usage AS u (scope, items, bytes) VALUES ('', 1, NEW.bytes)
        ON CONFLICT (scope) DO UPDATE SET items = u.items + 1, bytes = u.bytes + EXCLUDED.bytes;
      IF NEW.owner IS NOT NULL THEN
        INSERT INTO agent_item_usage AS u (scope, items, bytes) VALUES ('u:' || NEW.owner, 1, NEW.bytes)
          ON CONFLICT (scope) DO UPDATE SET items = u.items + 1, bytes = u.bytes + EXCLUDED.bytes;
      END IF;
    END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER agent_items_count AFTER INSERT OR DELETE OR UPDATE OF bytes, owner ON agent_items
    FOR EACH ROW EXECUTE FUNCTION agent_items_count();
  `,
];

/**
 * Applies the migrations `schema` lacks, then `more` (PostgresSaver's setup, which starts with `CREATE SCHEMA IF NOT
 * EXISTS`: PostgreSQL refuses it, even for a schema that exists, to a user without CREATE on the database, so the
 * user needs that, as the database's owner has), holding a session advisory lock on a
 * connection of its own the whole time: servers starting together on one database wait for each other, and the
 * first applies what is missing while the others find it applied. The lock goes with the connection, so a server
 * that dies mid-migration never leaves it held; each migration commits with its version, or neither does.
 */
export async function migrate(uri: string, schema: string, more: () => Promise<void>): Promise<number[]> {
  const client = new pg.Client({ connectionString: uri, options: `-c search_path=${quoteIdent(schema)}` });
  client.on('error', () => {}); // a lost connection fails the query under way; nothing else to tell
  await client.connect();
  const applied: number[] = [];
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [`agent-server migrations ${schema}`]);
    if (schema !== 'public') await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
    await client.query(
      'CREATE TABLE IF NOT EXISTS agent_schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const done = new Set(
      (await client.query<{ version: number }>('SELECT version FROM agent_schema_migrations')).rows.map(
        (r) => r.version,
      ),
    );
    for (const [i, sql] of MIGRATIONS.entries()) {
      const version = i + 1;
      if (done.has(version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(sql);
        await client.query('INSERT INTO agent_schema_migrations (version) VALUES ($1)', [version]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw new Error(`migration ${version} failed: ${(err as Error).message}`, { cause: err });
      }
      applied.push(version);
    }
    await more();
  } finally {
    await client.end().catch(() => {}); // ending the session releases the lock
  }
  return applied;
}
