import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * `node bin/gateway.js start` as a child process, the way it runs in
 * production. The edge's port is read from its `gateway listening` log line
 * (PORT=0 and ADMIN_PORT=0 unless given). Stopped by pid: SIGTERM, then
 * SIGKILL if it has not exited after the grace period.
 */
export interface SpawnedGateway {
  readonly pid: number;
  readonly port: number;
  readonly url: string;
  /** stdout JSON lines parsed so far. */
  lines(): Record<string, unknown>[];
  /** stdout and stderr text so far. */
  output(): string;
  /** Resolves once the process has exited. Idempotent. */
  stop(graceMs?: number): Promise<void>;
}

const BIN = fileURLToPath(new URL('../../bin/gateway.js', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Children still running, killed if the test process exits without stopping them. */
const live = new Set<ChildProcess>();
process.once('exit', () => live.forEach((c) => c.kill('SIGKILL')));

export async function spawnGateway(env: Record<string, string>, readyTimeoutMs = 30_000): Promise<SpawnedGateway> {
  const child = spawn(process.execPath, [BIN, 'start'], {
    cwd: ROOT,
    // A clean environment: nothing of the test runner's own settings leaks into the gateway.
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', ADMIN_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => (live.delete(child), resolve())));
  let stdout = '';
  let all = '';
  child.stdout!.on('data', (d: Buffer) => ((stdout += d.toString()), (all += d.toString())));
  child.stderr!.on('data', (d: Buffer) => (all += d.toString()));

  const lines = () =>
    stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, unknown>];
        } catch {
          return []; // a line still being written
        }
      });

  let stopping: Promise<void> | undefined;
  const stop = (graceMs = 5000) =>
    (stopping ??= (async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    })());

  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    const listening = lines().find((l) => l.msg === 'gateway listening');
    if (listening && typeof listening.port === 'number') {
      const port = listening.port;
      return { pid: child.pid!, port, url: `http://127.0.0.1:${port}`, lines, output: () => all, stop };
    }
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`gateway did not report "gateway listening" (exit ${child.exitCode ?? child.signalCode}):\n${all}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}
