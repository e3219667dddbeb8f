import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { RedisProcess } from './redis-server.ts';

/**
 * A private `redis-server` on a port the caller names: the "restart on the
 * same port" half of a restart test (`startRedis()` always picks a fresh
 * port). Loopback only, no persistence, its own temp dir, stopped by pid.
 */

const live = new Set<ChildProcess>();
process.once('exit', () => live.forEach((c) => c.kill('SIGKILL')));

export async function startRedisOnPort(port: number, readyTimeoutMs = 5000): Promise<RedisProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'redis-test-'));
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
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const keep = (d: Buffer) => (output = (output + d.toString()).slice(-4000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  child.once('error', () => {});
  live.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => (live.delete(child), resolve())));
  const gone = () => child.exitCode !== null || child.signalCode !== null;

  let stopping: Promise<void> | undefined;
  const stop = (graceMs = 2000) =>
    (stopping ??= (async () => {
      if (!gone()) {
        child.kill('SIGCONT'); // a paused server cannot act on SIGTERM
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    })());

  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    if (gone()) break;
    const probe = new Redis({
      port,
      host: '127.0.0.1',
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: 500,
    });
    probe.on('error', () => {});
    try {
      await probe.connect();
      if ((await probe.ping()) === 'PONG') {
        return {
          host: '127.0.0.1',
          port,
          url: `redis://127.0.0.1:${port}`,
          pid: child.pid!,
          stop,
          pause: () => void child.kill('SIGSTOP'),
          resume: () => void child.kill('SIGCONT'),
        };
      }
    } catch {
      // not listening yet
    } finally {
      probe.disconnect();
    }
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  await stop(500);
  throw new Error(`redis-server on port ${port} did not answer PING within ${readyTimeoutMs} ms:\n${output}`);
}
