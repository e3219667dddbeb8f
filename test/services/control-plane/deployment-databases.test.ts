import { randomBytes, randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import pino from 'pino';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DatabaseProvisionError,
  DeploymentDatabases,
} from '../../../src/services/control-plane/databases/deployment-databases.ts';
import { deploymentDatabaseName } from '../../../src/services/control-plane/databases/database-names.ts';
import {
  openRevisionDatabase,
  type RevisionDatabase,
} from '../../../src/services/revision-host/local/revision-database.ts';
import { startPrivatePostgres, type PrivatePostgres } from '../../helpers/private-postgres.ts';
import { client, deploymentBody, startControlPlane } from './helpers.ts';

/**
 * One database and one role per deployment, on a private cluster where every
 * connection authenticates with scram (never the machine's trust-auth
 * server), made by an operator role that may CREATE DATABASE and CREATE
 * ROLE but is no superuser; each revision reaches its database through the
 * host's forwarder (revision-database.ts) with the URI its process gets.
 */
const log = pino({ level: 'silent' });
const POOL = 3;
let server: PrivatePostgres;
let adminUri: string;
let adminPassword: string;
let databases: DeploymentDatabases;
const opened: RevisionDatabase[] = [];
const clients: pg.Client[] = [];

beforeAll(async () => {
  server = await startPrivatePostgres();
  adminPassword = `admin-${randomBytes(12).toString('hex')}`;
  await withClient(server.url, (c) =>
    c.query(`CREATE ROLE gw_operator LOGIN CREATEDB CREATEROLE PASSWORD '${adminPassword}'`),
  );
  adminUri = server.urlAs('gw_operator', adminPassword, 'postgres');
  databases = new DeploymentDatabases({ adminUri, passwordKey: randomBytes(32), poolSize: POOL, log });
}, 60_000);

afterAll(async () => {
  for (const c of clients) await c.end().catch(() => {});
  for (const d of opened) await d.close();
  await databases?.close();
  await server?.stop();
});

async function withClient<T>(url: string, f: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  c.on('error', () => {});
  await c.connect();
  try {
    return await f(c);
  } finally {
    await c.end();
  }
}

/** The error message of connecting (and a query), or `connected`. */
async function attempt(config: string | pg.ClientConfig): Promise<string> {
  const c = new pg.Client(
    typeof config === 'string'
      ? { connectionString: config, connectionTimeoutMillis: 5000 }
      : { ...config, connectionTimeoutMillis: 5000 },
  );
  c.on('error', () => {});
  try {
    await c.connect();
    await c.query('SELECT 1');
    clients.push(c);
    return 'connected';
  } catch (err) {
    await c.end().catch(() => {});
    return (err as Error).message;
  }
}

/** A new deployment's database and what its process gets. */
async function deployment() {
  const id = randomUUID();
  await databases.create(id);
  const access = await databases.accessFor(id);
  const db = await openRevisionDatabase(access, log);
  opened.push(db);
  return { id, access, db, direct: server.urlAs(access.role, access.password, access.database) };
}

describe('one database and one role per deployment', { timeout: 60_000 }, () => {
  it('gives two deployments two databases, each reachable only by its own role', async () => {
    const a = await deployment();
    const b = await deployment();
    expect(a.access.database).not.toBe(b.access.database);
    expect(a.access.role).toBe(deploymentDatabaseName(a.id));
    // Each through its own socket, with the URI its process gets: a table of its own.
    for (const d of [a, b])
      await withClient(d.db.env.DATABASE_URI!, async (c) => {
        await c.query('CREATE TABLE secrets (v text)');
        await c.query('INSERT INTO secrets VALUES ($1)', [`of ${d.id}`]);
        expect((await c.query('SELECT current_user, current_database()')).rows[0]).toEqual({
          current_user: d.access.role,
          current_database: d.access.database,
        });
      });
    // A's role, straight to the server (no forwarder in the way), to B's database, and the other way round.
    expect(await attempt(server.urlAs(a.access.role, a.access.password, b.access.database))).toMatch(
      /permission denied for database/,
    );
    expect(await attempt(server.urlAs(b.access.role, b.access.password, a.access.database))).toMatch(
      /permission denied for database/,
    );
    // With the other's password, neither role logs in.
    expect(await attempt(server.urlAs(a.access.role, b.access.password, a.access.database))).toMatch(
      /password authentication failed/,
    );
    // Even the operator's role, in B's database, does not make A a reader: A has no grant on B's table.
    await withClient(server.urlAs('gw_operator', adminPassword, b.access.database), async (c) => {
      await expect(
        c.query(`SET ROLE ${a.access.role}`).then(() => c.query('SELECT * FROM public.secrets')),
      ).rejects.toThrow(/permission denied/);
    });
    // PUBLIC keeps nothing on either database.
    await withClient(server.url, async (c) => {
      const { rows } = await c.query<{ datname: string; acl: string }>(
        'SELECT datname, datacl::text AS acl FROM pg_database WHERE datname = ANY($1)',
        [[a.access.database, b.access.database]],
      );
      expect(rows).toHaveLength(2);
      for (const r of rows) expect(r.acl).not.toMatch(/(^|[{,])=/);
    });
  });

  it('gives the process no operator credentials: only its role, its password, its socket folder', async () => {
    const a = await deployment();
    const env = JSON.stringify(a.db.env);
    expect(env).not.toContain(adminPassword);
    expect(env).not.toContain('gw_operator');
    expect(env).not.toContain(server.password);
    const uri = new URL(a.db.env.DATABASE_URI!);
    expect(decodeURIComponent(uri.username)).toBe(a.access.role);
    expect(uri.searchParams.get('host')).toBe(a.db.dir);
    expect(a.db.env.DATABASE_POOL_SIZE).toBe(String(POOL));
  });

  it('refuses, at the socket, another role, another database, the superuser and replication', async () => {
    const a = await deployment();
    const b = await deployment();
    const viaSocket = (user: string, password: string, database: string, extra: Partial<pg.ClientConfig> = {}) =>
      attempt({ host: a.db.dir, port: a.access.target.port, user, password, database, ...extra });
    expect(await viaSocket(b.access.role, b.access.password, b.access.database)).toMatch(/serves role/);
    expect(await viaSocket(a.access.role, a.access.password, b.access.database)).toMatch(/serves database/);
    expect(await viaSocket(server.superuser, server.password, 'postgres')).toMatch(/serves role/);
    expect(await viaSocket('postgres', '', 'postgres')).toMatch(/serves role/);
    expect(
      await viaSocket(a.access.role, a.access.password, a.access.database, { replication: 'database' } as never),
    ).toMatch(/replication/);
    // Garbage instead of a startup packet: closed, the forwarder still serves.
    await new Promise<void>((resolve) => {
      const s = connect(`${a.db.dir}/.s.PGSQL.${a.access.target.port}`);
      let answer = '';
      s.on('error', () => {});
      s.on('data', (d: Buffer) => (answer += d.toString('latin1')));
      s.on('close', () => (expect(answer).toContain('invalid startup packet length'), resolve()));
      s.write(Buffer.from('GET / HTTP/1.1\r\n\r\n'));
    });
    expect(await attempt(a.db.env.DATABASE_URI!)).toBe('connected');
  });

  it('holds the bounds: the pool and one per process at the socket, twice that per role at the server', async () => {
    const a = await deployment();
    const perProcess = POOL + 1;
    for (let i = 0; i < perProcess; i++) expect(await attempt(a.db.env.DATABASE_URI!)).toBe('connected');
    // One more through the socket: closed at accept.
    expect(await attempt(a.db.env.DATABASE_URI!)).toMatch(/terminated|closed|ECONNRESET|EPIPE/i);
    // The role itself, straight to the server: CONNECTION LIMIT 2 * (POOL + 1).
    for (let i = 0; i < perProcess; i++) expect(await attempt(a.direct)).toBe('connected');
    expect(await attempt(a.direct)).toMatch(/too many connections for role/);
  });

  it('keeps the data through a retried create and a revision start, and drops database and role on delete, twice', async () => {
    const a = await deployment();
    await withClient(a.db.env.DATABASE_URI!, (c) => c.query('CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)'));
    await databases.create(a.id);
    await databases.accessFor(a.id);
    await withClient(a.db.env.DATABASE_URI!, async (c) => {
      expect((await c.query('SELECT v FROM kept')).rows).toEqual([{ v: 7 }]);
    });
    const held = new pg.Client({ connectionString: a.db.env.DATABASE_URI! });
    held.on('error', () => {});
    await held.connect();
    await databases.remove(a.id);
    await databases.remove(a.id);
    await held.end().catch(() => {});
    await withClient(server.url, async (c) => {
      expect((await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [a.access.database])).rowCount).toBe(0);
      expect((await c.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [a.access.role])).rowCount).toBe(0);
    });
    // A start racing the delete makes nothing again.
    await expect(databases.accessFor(a.id)).rejects.toThrow(/deleted/);
  });

  it('fails a create it cannot finish with what the operator must fix, leaving nothing made', async () => {
    const weakPassword = `weak-${randomBytes(8).toString('hex')}`;
    await withClient(server.url, (c) =>
      c.query(`CREATE ROLE gw_weak LOGIN CREATEROLE NOCREATEDB PASSWORD '${weakPassword}'`),
    );
    const weak = new DeploymentDatabases({
      adminUri: server.urlAs('gw_weak', weakPassword, 'postgres'),
      passwordKey: randomBytes(32),
      poolSize: POOL,
      log,
    });
    const id = randomUUID();
    try {
      const err = await weak.create(id).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(DatabaseProvisionError);
      expect((err as Error).message).toMatch(/DEPLOYMENTS_DATABASE_URI.*permission denied to create database/);
      expect((err as Error).message).not.toContain(weakPassword);
      await withClient(server.url, async (c) => {
        const name = deploymentDatabaseName(id);
        expect((await c.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [name])).rowCount).toBe(0);
        expect((await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount).toBe(0);
      });
    } finally {
      await weak.close();
    }
  });
});

describe('POST and DELETE /v2/deployments with DEPLOYMENTS_DATABASE_URI', { timeout: 60_000 }, () => {
  const exists = async (name: string) =>
    withClient(server.url, async (c) => ({
      database: (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount,
      role: (await c.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [name])).rowCount,
    }));

  it('makes the database with the deployment and drops it with it', async () => {
    const t = await startControlPlane({ DEPLOYMENTS_DATABASE_URI: adminUri }, { host: null });
    try {
      const api = client(t.url, await t.tenant());
      const created = await api.post('/deployments', deploymentBody('https://github.com/example/app.git'));
      expect(created.status).toBe(201);
      const name = deploymentDatabaseName(created.json.id);
      expect(await exists(name)).toEqual({ database: 1, role: 1 });
      expect((await api.delete(`/deployments/${created.json.id}`)).status).toBe(204);
      expect(await exists(name)).toEqual({ database: 0, role: 0 });
    } finally {
      await t.close();
    }
  });

  it('answers 503 naming what the operator must fix when PostgreSQL refuses, and keeps no deployment', async () => {
    const password = `nodb-${randomBytes(8).toString('hex')}`;
    await withClient(server.url, (c) => c.query(`CREATE ROLE gw_nodb LOGIN CREATEROLE PASSWORD '${password}'`));
    const t = await startControlPlane(
      { DEPLOYMENTS_DATABASE_URI: server.urlAs('gw_nodb', password, 'postgres') },
      { host: null },
    );
    try {
      const api = client(t.url, await t.tenant());
      const refused = await api.post('/deployments', deploymentBody('https://github.com/example/app.git'));
      expect(refused.status).toBe(503);
      expect(refused.json.detail).toMatch(/DEPLOYMENTS_DATABASE_URI.*permission denied to create database.*operator/);
      expect(JSON.stringify(refused.json)).not.toContain(password);
      expect((await api.get('/deployments')).json.resources).toEqual([]);
      const roles = await withClient(server.url, (c) =>
        c.query("SELECT 1 FROM pg_roles WHERE rolname LIKE 'gw_dep_%'"),
      );
      const before = roles.rowCount;
      await api.post('/deployments', deploymentBody('https://github.com/example/app.git'));
      const after = await withClient(server.url, (c) =>
        c.query("SELECT 1 FROM pg_roles WHERE rolname LIKE 'gw_dep_%'"),
      );
      expect(after.rowCount).toBe(before);
    } finally {
      await t.close();
    }
  });
});
