// Shared by the tests that must own their PostgreSQL server (stop it, restart it) and the bench.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './redis-server.ts';

const run = promisify(execFile);

/**
 * A private PostgreSQL cluster (`initdb` and `postgres` from PATH, Debian's /usr/lib/postgresql/<v>/bin behind
 * /usr/local/bin): a fresh temp dir, loopback only on a free port, trust authentication for its superuser `postgres`,
 * no fsync (a test's data need not survive the machine, only the server). As root, the server runs as the `postgres`
 * user (initdb refuses root). Stopped and started again by its pid, never by name; the shared server is never touched.
 */
export interface PostgresCluster {
  readonly port: number;
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  readonly url: string;
  /** The postmaster's pid while it runs. */
  readonly pid: number | null;
  /**
   * Stops the server: `immediate` (SIGQUIT: no checkpoint, crash recovery at the next start, as after a crash) or
   * `fast` (SIGINT). Resolves when it has exited.
   */
  stop(mode?: 'immediate' | 'fast'): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Stops it and removes its files. */
  destroy(): Promise<void>;
}

const asPostgres = (): string[] =>
  process.getuid?.() === 0 ? ['setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups', '--'] : [];

async function binDir(): Promise<string> {
  const { stdout } = await run('pg_config', ['--bindir']).catch(async () => {
    const { stdout: real } = await run('readlink', ['-f', '/usr/local/bin/initdb']);
    return { stdout: join(real.trim(), '..') };
  });
  return stdout.trim();
}

export async function startPostgresCluster(): Promise<PostgresCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-pg-'));
  const data = join(dir, 'data');
  if (process.getuid?.() === 0) chownSync(dir, Number((await run('id', ['-u', 'postgres'])).stdout.trim()), 0);
  const bin = await binDir();
  const [cmd, ...prefix] = [...asPostgres(), join(bin, 'initdb')];
  await run(cmd!, [...prefix, '-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
  const port = await freePort();
  let child: ChildProcess | null = null;
  let exited: Promise<void> = Promise.resolve();

  const start = async () => {
    const [c, ...p] = [...asPostgres(), join(bin, 'postgres')];
    const args = [...p, '-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1'];
    args.push('-c', 'fsync=off', '-c', 'max_connections=50');
    child = spawn(c!, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-4000)));
    const proc = child;
    exited = new Promise((resolve) => proc.once('exit', () => resolve()));
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`postgres exited at start: ${stderr}`);
      const client = new pg.Client({ connectionString: url });
      client.on('error', () => {});
      try {
        await client.connect();
        await client.query('SELECT 1');
        await client.end();
        return;
      } catch {
        await client.end().catch(() => {});
        if (Date.now() > deadline) throw new Error(`postgres did not answer in 30 s: ${stderr}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const stop = async (mode: 'immediate' | 'fast' = 'fast') => {
    const proc = child as ChildProcess | null;
    if (proc === null || proc.exitCode !== null) return;
    proc.kill(mode === 'immediate' ? 'SIGQUIT' : 'SIGINT');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
    child = null;
  };
  await start();
  return {
    port,
    url,
    get pid() {
      return (child as ChildProcess | null)?.pid ?? null;
    },
    stop,
    start,
    destroy: async () => {
      await stop('fast');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
