import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploymentDatabaseName } from '../../src/services/control-plane/databases/database-names.ts';
import { startPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres.ts';
import { client } from '../services/control-plane/helpers.ts';
import { answer, hostileApp, hostileNextToVictim, type Attack } from './fixtures/two-tenants.ts';

/**
 * With DEPLOYMENTS_DATABASE_URI each deployment has a PostgreSQL database
 * and role of its own, and its process reaches them only through a socket
 * the host forwards (revision-database.ts). The hostile deployment's graph
 * code, at request time, uses what it has (DATABASE_URI: its role, its
 * password, the socket's folder) to try the victim's role, the victim's
 * database, the bootstrap superuser and the operator's role, through that
 * socket. Real builds, the machine's sandbox, a private scram-only cluster
 * whose operator role may CREATE DATABASE and CREATE ROLE, nothing more.
 */
const OPERATOR = 'gw_operator';
const OPERATOR_PASSWORD = `operator-${randomBytes(12).toString('hex')}`;

/** At request time: `text` names the victim's database (and role). Each attempt answers the user it got, or why not. */
const TRY_EVERYTHING = `
  const { createRequire } = await import('node:module');
  const pg = createRequire(process.cwd() + '/graph.cjs')('pg');
  const uri = new URL(process.env.DATABASE_URI ?? 'postgresql://none@localhost/none');
  const socketDir = uri.searchParams.get('host');
  const port = Number(uri.port || 5432);
  const own = { user: decodeURIComponent(uri.username), password: decodeURIComponent(uri.password), database: uri.pathname.slice(1) };
  // A connection just closed may still count against the socket's bound for a moment (its close not yet seen by the
  // gateway): one over it is closed as accepted (ECONNRESET, or EPIPE when its startup packet is still being
  // written), so an attempt so refused is made again.
  const attempt = async (cfg: any, tries = 5): Promise<string> => {
    const said = await attemptOnce(cfg);
    if (tries <= 1 || !/ECONNRESET|EPIPE|Connection terminated unexpectedly/.test(said)) return said;
    await new Promise((r) => setTimeout(r, 200));
    return attempt(cfg, tries - 1);
  };
  const attemptOnce = async (cfg: any) => {
    const c = new pg.Client({ host: socketDir, port, connectionTimeoutMillis: 5000, ...cfg });
    c.on('error', () => {});
    try {
      await c.connect();
      const r = await c.query('SELECT current_user AS u, current_database() AS d');
      await c.end();
      return r.rows[0].u + '@' + r.rows[0].d;
    } catch (err: any) {
      await c.end().catch(() => {});
      return 'refused: ' + err.message;
    }
  };
  return JSON.stringify({
    env: JSON.stringify(process.env),
    own: await attempt({ connectionString: process.env.DATABASE_URI }),
    asVictim: await attempt({ user: text, password: own.password, database: text }),
    ownRoleVictimDb: await attempt({ ...own, database: text }),
    asSuperuser: await attempt({ user: 'pgadmin', password: own.password, database: 'postgres' }),
    asPostgres: await attempt({ user: 'postgres', password: '', database: 'postgres' }),
    asOperator: await attempt({ user: '${OPERATOR}', password: own.password, database: 'postgres' }),
    ownRoleTemplate: await attempt({ ...own, database: 'template1' }),
  });
`;

let server: PrivatePostgres;
let a: Attack;
let seen: Record<string, string>;

async function query<T extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: server.url });
  c.on('error', () => {});
  await c.connect();
  try {
    return (await c.query<T>(sql, params)).rows;
  } finally {
    await c.end();
  }
}

beforeAll(async () => {
  server = await startPrivatePostgres();
  await query(`CREATE ROLE ${OPERATOR} LOGIN CREATEDB CREATEROLE PASSWORD '${OPERATOR_PASSWORD}'`);
  a = await hostileNextToVictim(hostileApp('', TRY_EVERYTHING), {
    DEPLOYMENTS_DATABASE_URI: server.urlAs(OPERATOR, OPERATOR_PASSWORD, 'postgres'),
    DEPLOYMENT_DATABASE_POOL_SIZE: '2',
  });
  expect(a.hostile.status, a.hostile.message ?? '').toBe('DEPLOYED');
  seen = JSON.parse(await answer(a, a.hostile, deploymentDatabaseName(a.victim.id))) as Record<string, string>;
}, 240_000);

afterAll(async () => {
  await a?.close();
  await server?.stop();
});

describe('a deployment reaches another deployment\u2019s database', { timeout: 60_000 }, () => {
  it('has a database of its own, which it uses through its socket', async () => {
    const mine = deploymentDatabaseName(a.hostile.id);
    expect(seen.own).toBe(`${mine}@${mine}`);
    const names = (await query<{ datname: string }>('SELECT datname FROM pg_database')).map((r) => r.datname);
    expect(names).toEqual(expect.arrayContaining([mine, deploymentDatabaseName(a.victim.id)]));
    // Its Agent Server keeps its data there (DATABASE_URI): its tables, owned by its role, made through the socket.
    const c = new pg.Client({ connectionString: server.url.replace(/\/postgres$/, `/${mine}`) });
    await c.connect();
    try {
      const { rows } = await c.query<{ owner: string }>(
        "SELECT DISTINCT tableowner AS owner FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')",
      );
      expect(rows).toEqual([{ owner: mine }]);
    } finally {
      await c.end();
    }
  });

  it('is refused as the victim\u2019s role, in the victim\u2019s database, as the superuser or the operator', () => {
    expect(seen.asVictim).toMatch(/^refused: .*serves role/);
    expect(seen.ownRoleVictimDb).toMatch(/^refused: .*serves database/);
    expect(seen.asSuperuser).toMatch(/^refused: .*serves role/);
    expect(seen.asPostgres).toMatch(/^refused: .*serves role/);
    expect(seen.asOperator).toMatch(/^refused: .*serves role/);
    expect(seen.ownRoleTemplate).toMatch(/^refused: .*serves database/);
  });

  it('finds the operator\u2019s credentials nowhere: its environment, its process, its logs, its files', async () => {
    expect(seen.env).toContain('DATABASE_URI');
    expect(seen.env).not.toContain(OPERATOR_PASSWORD);
    expect(seen.env).not.toContain(OPERATOR);
    for (const d of [a.hostile, a.victim]) {
      const proc = a.t.cp.serving!.current(d.id)!.proc!;
      expect(readFileSync(`/proc/${proc.pid}/environ`, 'latin1')).not.toContain(OPERATOR_PASSWORD);
    }
    expect(JSON.stringify(a.t.logs.lines())).not.toContain(OPERATOR_PASSWORD);
    // Its build folder and everything else under the control plane's work folder: grep finds nothing (status 1).
    const grep = spawnSync('grep', ['-rl', '--', OPERATOR_PASSWORD, a.t.workDir], { encoding: 'utf8' });
    expect(grep.stdout).toBe('');
    expect(grep.status).toBe(1);
  });

  it('takes its database and role with it when deleted; a second delete changes nothing more', async () => {
    const api = client(a.t.url, a.hostile.tenant);
    const name = deploymentDatabaseName(a.hostile.id);
    expect((await api.delete(`/deployments/${a.hostile.id}`)).status).toBe(204);
    expect(await query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).toEqual([]);
    expect(await query('SELECT 1 FROM pg_roles WHERE rolname = $1', [name])).toEqual([]);
    expect((await api.delete(`/deployments/${a.hostile.id}`)).status).toBe(404);
    // The victim's are still there.
    const victim = deploymentDatabaseName(a.victim.id);
    expect(await query('SELECT 1 FROM pg_roles WHERE rolname = $1', [victim])).toHaveLength(1);
  });
});
