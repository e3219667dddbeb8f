// Shared by the tests (test/helpers, the Redis outage and cluster tests) and the bench (bench/peers/private-redis.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

/**
 * Private `redis-server` processes for tests that must own their server:
 * SCRIPT FLUSH, kill, pause, cluster. Loopback only, no persistence, a fresh
 * temp dir each, stopped by pid. The shared Redis is never touched.
 */

export interface RedisProcess {
  readonly host: '127.0.0.1';
  readonly port: number;
  readonly url: string;
  readonly pid: number;
  /** SIGTERM, then SIGKILL if still alive after `graceMs`; resolves when the process has exited. Idempotent. */
  stop(graceMs?: number): Promise<void>;
  /** SIGSTOP: the server keeps its connections but answers nothing (a hung store). */
  pause(): void;
  /** SIGCONT after `pause()`. */
  resume(): void;
}

export interface StartRedisOptions {
  /** Extra `redis-server` arguments, e.g. ['--cluster-enabled', 'yes']. */
  readonly args?: readonly string[];
  /** Directory for the server's files; a fresh temp dir (removed on stop) when absent. */
  readonly dir?: string;
  /** How long to wait for PING, ms. */
  readonly readyTimeoutMs?: number;
}

/** A port free on 127.0.0.1 right now (another process may still take it before us: callers retry). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function startRedis(opts: StartRedisOptions = {}): Promise<RedisProcess> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      return await startOnce(await freePort(), opts);
    } catch (err) {
      lastError = err;
      if (!(err instanceof PortTakenError)) throw err;
    }
  }
  throw lastError;
}

class PortTakenError extends Error {}

/** Servers still running, killed if the test process exits without stopping them. */
const live = new Set<ChildProcess>();
process.once('exit', () => live.forEach((c) => c.kill('SIGKILL')));

/**
 * A private `redis-server` on a port the caller names: the "restart on the same port" half of a restart test
 * (`startRedis()` always picks a fresh port).
 */
export function startRedisOnPort(
  port: number,
  readyTimeoutMs = 5000,
  opts: Omit<StartRedisOptions, 'readyTimeoutMs'> = {},
): Promise<RedisProcess> {
  return startOnce(port, { ...opts, readyTimeoutMs });
}

async function startOnce(port: number, opts: StartRedisOptions): Promise<RedisProcess> {
  const ownDir = opts.dir === undefined;
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'redis-test-'));
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'no',
      ...(opts.args ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  child.stderr.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  live.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => (live.delete(child), resolve())));
  const cleanup = (): void => {
    if (ownDir) rmSync(dir, { recursive: true, force: true });
  };
  child.once('error', () => {}); // reported through waitForPing failing and the exit below

  try {
    await waitForPing(port, child, opts.readyTimeoutMs ?? 5000);
  } catch (err) {
    await kill(child, exited, 1000);
    cleanup();
    if (/address already in use/i.test(output)) throw new PortTakenError(`port ${port} taken`);
    throw new Error(`redis-server on port ${port} did not start: ${(err as Error).message}\n${output}`);
  }

  let stopping: Promise<void> | undefined;
  return {
    host: '127.0.0.1',
    port,
    url: `redis://127.0.0.1:${port}`,
    pid: child.pid!,
    stop: (graceMs = 2000) => (stopping ??= kill(child, exited, graceMs).then(cleanup)),
    pause: () => void child.kill('SIGSTOP'),
    resume: () => void child.kill('SIGCONT'),
  };
}

async function waitForPing(port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`exited (${child.exitCode ?? child.signalCode})`);
    const probe = new Redis({
      port,
      host: '127.0.0.1',
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: 500,
      enableReadyCheck: false, // its INFO would fail on a server with a password, and close the connection
    });
    probe.on('error', () => {});
    try {
      await probe.connect();
      if ((await probe.ping()) === 'PONG') return;
    } catch (err) {
      // A server started with --requirepass answers, but not to a client without the password: it is up.
      if (/NOAUTH/.test((err as Error).message)) return;
      // else not listening yet
    } finally {
      probe.disconnect();
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no PING answer within ${timeoutMs} ms`);
}

async function kill(child: ChildProcess, exited: Promise<void>, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGCONT'); // a paused server cannot act on SIGTERM
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

export interface RedisCluster {
  /** Seed nodes for `new Cluster(nodes)`. */
  readonly nodes: readonly { host: string; port: number }[];
  readonly servers: readonly RedisProcess[];
  stop(): Promise<void>;
}

/** A cluster of `size` masters, no replicas, on free loopback ports; resolves once every node says cluster_state:ok. */
export async function startRedisCluster(size = 3, timeoutMs = 20_000): Promise<RedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'redis-cluster-'));
  const servers: RedisProcess[] = [];
  const stop = async () => {
    await Promise.all(servers.map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < size; i++) {
      // Each node needs its own config file; the port is only known once startRedis picked it.
      const nodeDir = mkdtempSync(join(dir, 'node-'));
      servers.push(
        await startRedis({
          dir: nodeDir,
          args: ['--cluster-enabled', 'yes', '--cluster-config-file', join(nodeDir, 'nodes.conf')],
        }),
      );
    }
    await run(
      'redis-cli',
      ['--cluster', 'create', ...servers.map((s) => `127.0.0.1:${s.port}`), '--cluster-replicas', '0', '--cluster-yes'],
      timeoutMs,
    );
    await waitForClusterOk(servers, timeoutMs);
  } catch (err) {
    await stop();
    throw err;
  }
  return { nodes: servers.map((s) => ({ host: s.host, port: s.port })), servers, stop };
}

async function waitForClusterOk(servers: readonly RedisProcess[], timeoutMs: number): Promise<void> {
  const clients = servers.map((s) => new Redis({ port: s.port, host: s.host, maxRetriesPerRequest: 1 }));
  try {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const infos = await Promise.all(clients.map((c) => c.cluster('INFO')));
      if (infos.every((info) => info.includes('cluster_state:ok'))) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`cluster not ok within ${timeoutMs} ms`);
  } finally {
    clients.forEach((c) => c.disconnect());
  }
}

function run(cmd: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(output);
      else reject(new Error(`${cmd} ${args.join(' ')} exited ${code}:\n${output}`));
    });
  });
}
