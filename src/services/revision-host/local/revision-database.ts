import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { startPostgresForward, type PostgresTarget } from './postgres-forward.ts';

export type { PostgresTarget } from './postgres-forward.ts';

/**
 * A revision's way to its PostgreSQL database (DEPLOYMENTS_DATABASE_URI:
 * deployment-databases.ts): a folder the host makes for it (0700, the
 * host's) holding the socket of a forwarder (postgres-forward.ts) that lets
 * through only its deployment's role to its database, at most
 * `maxConnections` at once (its pool, and one for the migration lock at start). The process gets `DATABASE_URI` with its role's
 * password and that folder as `host`, and `DATABASE_POOL_SIZE`; never the
 * operator's credentials. The sandbox gets the folder (launch.ts), removed
 * with the process.
 */
export interface RevisionDatabaseAccess {
  readonly role: string;
  readonly database: string;
  /** The role's own password (64 hex digits). */
  readonly password: string;
  /** The operator's server. */
  readonly target: PostgresTarget;
  /** The process's pool size (DATABASE_POOL_SIZE). */
  readonly poolSize: number;
  /** Connections of one process at once through its forwarder: its pool and its migration lock's. */
  readonly maxConnections: number;
}

export interface RevisionDatabase {
  /** The folder to give the sandbox. */
  readonly dir: string;
  /** DATABASE_URI and DATABASE_POOL_SIZE for the process's environment. */
  readonly env: Readonly<Record<string, string>>;
  close(): Promise<void>;
}

export async function openRevisionDatabase(access: RevisionDatabaseAccess, log: Logger): Promise<RevisionDatabase> {
  const dir = mkdtempSync(join(tmpdir(), 'revision-pg-'));
  try {
    const port = access.target.port;
    const forward = await startPostgresForward({
      socketPath: join(dir, `.s.PGSQL.${port}`),
      target: access.target,
      role: access.role,
      database: access.database,
      maxConnections: access.maxConnections,
      log,
    });
    let closed: Promise<void> | null = null;
    return {
      dir,
      env: {
        DATABASE_URI: databaseUri(access, dir),
        DATABASE_POOL_SIZE: String(access.poolSize),
      },
      close: () =>
        (closed ??= (async () => {
          await forward.close();
          rmSync(dir, { recursive: true, force: true });
        })()),
    };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** `postgresql://<role>:<password>@localhost:<port>/<db>?host=<folder>`: node-postgres and libpq read a folder as host. */
export function databaseUri(access: RevisionDatabaseAccess, dir: string): string {
  const e = encodeURIComponent;
  return `postgresql://${e(access.role)}:${e(access.password)}@localhost:${access.target.port}/${e(access.database)}?host=${e(dir)}`;
}
