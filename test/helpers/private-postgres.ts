import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from '../../support/redis-server.ts';

/**
 * A private PostgreSQL cluster for tests that need roles which really
 * authenticate (scram-sha-256 for every connection, local or TCP), never
 * the machine's shared trust-auth server: `initdb --auth=scram-sha-256
 * --pwfile` in a fresh temp folder, `postgres` on a free loopback port.
 * initdb refuses root: as root, both run as `nobody` (setpriv, which execs,
 * so the pid is the server's) in a folder that user owns. Stopped by its pid
 * (SIGINT: fast shutdown), its folder removed. `alsoOn` makes it listen on one
 * more address too (a netns bridge's: test/helpers/netns-hosts.ts) and admit
 * clients of a subnet there, with their password.
 */
export interface PrivatePostgres {
  readonly host: '127.0.0.1';
  readonly port: number;
  /** The bootstrap superuser and its password. */
  readonly superuser: string;
  readonly password: string;
  /** `postgresql://<superuser>:<password>@127.0.0.1:<port>/postgres` */
  readonly url: string;
  readonly pid: number;
  /** A URL of this server as `user` with `password` to `database`. */
  urlAs(user: string, password: string, database: string): string;
  stop(): Promise<void>;
}

const UNPRIVILEGED = 'nobody';

export interface PrivatePostgresOptions {
  /** One more address to listen on, and the CIDR of the clients admitted there (scram-sha-256). */
  readonly alsoOn?: { readonly address: string; readonly clients: string };
}

export async function startPrivatePostgres(options: PrivatePostgresOptions = {}): Promise<PrivatePostgres> {
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'private-pg-'));
  const data = join(dir, 'data');
  const sockets = join(dir, 'sockets');
  const pwfile = join(dir, 'pwfile');
  const superuser = 'pgadmin';
  const password = `pg-${randomBytes(12).toString('hex')}`;
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  execFileSync('mkdir', ['-p', data, sockets]);
  const as = (argv: string[]): string[] => {
    if (!root) return argv;
    return ['setpriv', `--reuid=${UNPRIVILEGED}`, `--regid=nogroup`, '--clear-groups', '--', ...argv];
  };
  if (root) {
    const uid = Number(execFileSync('id', ['-u', UNPRIVILEGED]).toString().trim());
    const gid = Number(execFileSync('id', ['-g', UNPRIVILEGED]).toString().trim());
    for (const p of [dir, data, sockets, pwfile]) chownSync(p, uid, gid);
  }
  try {
    const [cmd, ...args] = as([
      'initdb',
      '-D',
      data,
      '-U',
      superuser,
      '--auth=scram-sha-256',
      `--pwfile=${pwfile}`,
      '--no-sync',
      '-E',
      'UTF8',
      '--locale=C',
    ]);
    execFileSync(cmd!, args, { stdio: 'pipe' });
    if (options.alsoOn)
      appendFileSync(join(data, 'pg_hba.conf'), `host all all ${options.alsoOn.clients} scram-sha-256\n`);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    const e = err as { stderr?: Buffer; message: string };
    throw new Error(`initdb failed: ${e.stderr?.toString() ?? e.message}`);
  }
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const [cmd, ...args] = as([
      'postgres',
      '-D',
      data,
      '-p',
      String(port),
      '-k',
      sockets,
      '-c',
      `listen_addresses=${['127.0.0.1', ...(options.alsoOn ? [options.alsoOn.address] : [])].join(',')}`,
      '-c',
      'fsync=off',
      '-c',
      'max_connections=60',
    ]);
    const child = spawn(cmd!, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    const url = `postgresql://${superuser}:${password}@127.0.0.1:${port}/postgres`;
    try {
      await ready(url, child, () => stderr);
    } catch (err) {
      lastError = err;
      await stopChild(child);
      if (/could not bind|Address already in use/.test(stderr)) continue;
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    let stopped: Promise<void> | null = null;
    return {
      host: '127.0.0.1',
      port,
      superuser,
      password,
      url,
      pid: child.pid!,
      urlAs: (user, pw, database) =>
        `postgresql://${encodeURIComponent(user)}:${encodeURIComponent(pw)}@127.0.0.1:${port}/${encodeURIComponent(database)}`,
      stop: () =>
        (stopped ??= (async () => {
          await stopChild(child);
          rmSync(dir, { recursive: true, force: true });
        })()),
    };
  }
  rmSync(dir, { recursive: true, force: true });
  throw lastError;
}

async function ready(url: string, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`postgres exited: ${stderr()}`);
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    c.on('error', () => {});
    try {
      await c.connect();
      await c.query('SELECT 1');
      await c.end();
      return;
    } catch {
      await c.end().catch(() => {});
      if (Date.now() > deadline) throw new Error(`postgres not ready in 30 s: ${stderr()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGINT');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}
