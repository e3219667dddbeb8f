import pg from 'pg';
import type { Logger } from 'pino';
import { RevisionLoadError } from '../../revision-host/revision-host.ts';
import type { PostgresTarget, RevisionDatabaseAccess } from '../../revision-host/local/revision-database.ts';
import { deploymentDatabaseName, deploymentDatabasePassword, quoteIdent, quoteLiteral } from './database-names.ts';
import { scramVerifier } from './scram-verifier.ts';

/**
 * One PostgreSQL database and one role per deployment, made with the
 * operator's DEPLOYMENTS_DATABASE_URI (a role that may CREATE DATABASE and
 * CREATE ROLE): the role LOGIN, NOSUPERUSER, with a password only the
 * deployment's processes get (database-names.ts), `CONNECTION LIMIT` twice
 * a process's bound (the pool size and one: a redeploy's new process starts
 * while the old one drains),
 * owner of its database; CONNECT and TEMPORARY on the database and CREATE on
 * its `public` schema taken from PUBLIC, so no other role connects or
 * reads. Every step is idempotent (a retried create, two gateways at once,
 * a restart); a create that fails drops what it made; a revision start makes
 * again what is missing (a deployment created before the setting was) and
 * sets the password again; a delete drops the database (WITH (FORCE):
 * its connections end) and the role. A deleted deployment's id is
 * remembered a while so a start racing its delete makes nothing again.
 */
export interface DeploymentDatabasesOptions {
  /** DEPLOYMENTS_DATABASE_URI: never given to a revision, never logged. */
  readonly adminUri: string;
  /** The key of the deployments' passwords (SecretBox.derive of SECRETS_KEY). */
  readonly passwordKey: Buffer;
  /** DEPLOYMENT_DATABASE_POOL_SIZE: each revision process's pool (its forwarder lets one more through). */
  readonly poolSize: number;
  readonly log: Logger;
}

/** What the operator must fix: the deployments' PostgreSQL refused or could not be reached. Answered 503. */
export class DatabaseProvisionError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DatabaseProvisionError';
  }
}

/** How long a deleted deployment's id is remembered, so a start racing the delete cannot make its database again. */
const DELETED_FOR_MS = 10 * 60_000;
const CONNECT_TIMEOUT_MS = 10_000;
/** PostgreSQL's codes for "already exists" (a retried or concurrent create). */
const DUPLICATE_OBJECT = '42710';
const DUPLICATE_DATABASE = '42P04';

export class DeploymentDatabases {
  /** Where the revisions' forwarders connect: DEPLOYMENTS_DATABASE_URI's server. */
  readonly target: PostgresTarget;
  private readonly admin: pg.Pool;
  private readonly deleted = new Set<string>();
  /** One change at a time per deployment: a delete never runs in the middle of a create. */
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(private readonly o: DeploymentDatabasesOptions) {
    this.target = postgresTarget(o.adminUri);
    this.admin = new pg.Pool({ ...adminConfig(o.adminUri), max: 2, idleTimeoutMillis: 30_000 });
    this.admin.on('error', (err) => o.log.warn({ err: err.message }, 'deployments database: admin connection error'));
  }

  /** One process's connections at once: its pool and, at start, its migration lock's (migrations.ts). */
  get processConnections(): number {
    return this.o.poolSize + 1;
  }

  /** The role's connection bound: two processes' (a redeploy's old one draining while the new one starts). */
  get connectionLimit(): number {
    return 2 * this.processConnections;
  }

  /** Says once, at start, whether DEPLOYMENTS_DATABASE_URI's role can do its job (never fails the start). */
  async check(): Promise<void> {
    try {
      const { rows } = await this.admin.query<{ rolsuper: boolean; rolcreatedb: boolean; rolcreaterole: boolean }>(
        'SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = current_user',
      );
      const r = rows[0];
      if (r && (r.rolsuper || (r.rolcreatedb && r.rolcreaterole)))
        this.o.log.info(
          { target: describeTarget(this.target), poolSize: this.o.poolSize },
          'each deployment gets a PostgreSQL database and role of its own',
        );
      else
        this.o.log.error(
          'DEPLOYMENTS_DATABASE_URI\u2019s role may not CREATE DATABASE and CREATE ROLE: creating a deployment will fail (503) until it may',
        );
    } catch (err) {
      this.o.log.error({ err: (err as Error).message }, 'DEPLOYMENTS_DATABASE_URI cannot be reached yet');
    }
  }

  /** A new deployment's database and role; on failure nothing is left of them, and a DatabaseProvisionError. */
  async create(deploymentId: string): Promise<void> {
    await this.serially(deploymentId, async () => {
      this.deleted.delete(deploymentId);
      try {
        await this.ensure(deploymentId);
      } catch (err) {
        await this.drop(deploymentId).catch((dropErr: Error) =>
          this.o.log.error({ deploymentId, err: dropErr.message }, 'a half-made deployment database stays'),
        );
        throw provisionError('make', err);
      }
    });
    this.o.log.info({ deploymentId, database: deploymentDatabaseName(deploymentId) }, 'deployment database created');
  }

  /** What a revision's process needs to reach its database (made again if missing); a RevisionLoadError when not. */
  async accessFor(deploymentId: string): Promise<RevisionDatabaseAccess> {
    return this.serially(deploymentId, async () => {
      if (this.deleted.has(deploymentId)) throw new RevisionLoadError('the deployment is deleted');
      try {
        await this.ensure(deploymentId);
      } catch (err) {
        throw new RevisionLoadError(provisionError('reach', err).message);
      }
      const name = deploymentDatabaseName(deploymentId);
      return {
        role: name,
        database: name,
        password: deploymentDatabasePassword(this.o.passwordKey, deploymentId),
        target: this.target,
        poolSize: this.o.poolSize,
        maxConnections: this.processConnections,
      };
    });
  }

  /** A deleted deployment: its database (its connections ended) and its role dropped; idempotent. */
  async remove(deploymentId: string): Promise<void> {
    await this.serially(deploymentId, async () => {
      this.deleted.add(deploymentId);
      setTimeout(() => this.deleted.delete(deploymentId), DELETED_FOR_MS).unref();
      try {
        await this.drop(deploymentId);
      } catch (err) {
        this.deleted.delete(deploymentId);
        throw provisionError('drop', err);
      }
    });
    this.o.log.info({ deploymentId }, 'deployment database dropped');
  }

  async close(): Promise<void> {
    await this.admin.end();
  }

  private async ensure(deploymentId: string): Promise<void> {
    const name = deploymentDatabaseName(deploymentId);
    const role = quoteIdent(name);
    const verifier = quoteLiteral(scramVerifier(deploymentDatabasePassword(this.o.passwordKey, deploymentId)));
    // What a revision start sets again (a role that is not superuser may not name SUPERUSER, REPLICATION, BYPASSRLS).
    // INHERIT (the default): its rights on its public schema come through pg_database_owner.
    const attributes = `LOGIN CONNECTION LIMIT ${this.connectionLimit} PASSWORD ${verifier}`;
    const created = `NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS ${attributes}`;
    const admin = await this.admin.connect();
    try {
      const exists = await admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [name]);
      if (exists.rowCount === 0) await ignoring(DUPLICATE_OBJECT, admin.query(`CREATE ROLE ${role} ${created}`));
      await admin.query(`ALTER ROLE ${role} WITH ${attributes}`);
      // A role that is not superuser may make a database owned by another only as a member of it.
      const { rows } = await admin.query<{ rolsuper: boolean }>(
        'SELECT rolsuper FROM pg_roles WHERE rolname = current_user',
      );
      if (!rows[0]?.rolsuper) await ignoring(DUPLICATE_OBJECT, admin.query(`GRANT ${role} TO CURRENT_USER`));
      const db = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (db.rowCount === 0) await ignoring(DUPLICATE_DATABASE, admin.query(`CREATE DATABASE ${role} OWNER ${role}`));
      await admin.query(`REVOKE ALL ON DATABASE ${role} FROM PUBLIC`);
    } finally {
      admin.release();
    }
    // Its public schema: nobody but its owner (pg_database_owner: the deployment's role) creates or reads there.
    const inside = new pg.Client({ ...adminConfig(this.o.adminUri, name) });
    inside.on('error', () => {});
    await inside.connect();
    try {
      await inside.query('REVOKE ALL ON SCHEMA public FROM PUBLIC');
    } finally {
      await inside.end();
    }
  }

  private async drop(deploymentId: string): Promise<void> {
    const role = quoteIdent(deploymentDatabaseName(deploymentId));
    await this.admin.query(`DROP DATABASE IF EXISTS ${role} WITH (FORCE)`);
    await this.admin.query(`DROP ROLE IF EXISTS ${role}`);
  }

  private serially<T>(deploymentId: string, job: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(deploymentId) ?? Promise.resolve();
    const next = previous.then(job, job);
    const settled = next.catch(() => {});
    this.queues.set(deploymentId, settled);
    void settled.then(() => this.queues.get(deploymentId) === settled && this.queues.delete(deploymentId));
    return next;
  }
}

/** A statement whose "already exists" means another create got there first: done all the same. */
async function ignoring(code: string, statement: Promise<unknown>): Promise<void> {
  try {
    await statement;
  } catch (err) {
    if ((err as { code?: string }).code !== code) throw err;
  }
}

function provisionError(what: 'make' | 'reach' | 'drop', err: unknown): DatabaseProvisionError {
  const reason = (err as Error).message || String(err);
  return new DatabaseProvisionError(
    `the deployments' PostgreSQL (DEPLOYMENTS_DATABASE_URI) could not ${what} this deployment's database: ${reason}. ` +
      'The operator must make it reachable and give its role CREATEDB and CREATEROLE; retry once fixed.',
    { cause: err },
  );
}

/** The admin connection's settings, to its own database or to `database`. */
function adminConfig(uri: string, database?: string): pg.ClientConfig {
  const url = new URL(uri);
  if (database !== undefined) url.pathname = `/${encodeURIComponent(database)}`;
  return { connectionString: url.toString(), connectionTimeoutMillis: CONNECT_TIMEOUT_MS };
}

/** The server of a postgres URL: TCP host and port, or a Unix socket when `?host=` is a folder. */
export function postgresTarget(uri: string): PostgresTarget {
  const url = new URL(uri);
  const port = Number(url.port || 5432);
  const hostParam = url.searchParams.get('host');
  if (hostParam?.startsWith('/')) return { path: `${hostParam}/.s.PGSQL.${port}`, port };
  return { host: decodeURIComponent(url.hostname.replace(/^\[|\]$/g, '')) || 'localhost', port };
}

function describeTarget(t: PostgresTarget): string {
  return 'path' in t ? t.path : `${t.host}:${t.port}`;
}
