import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/**
 * Issue 28, leftover of "the CLI and the start are polite": `gateway start` whose stdout was closed (`| head`, a
 * collector gone) died of an unhandled EPIPE with a stack trace (exit 70), or hung for ever in pino's flush at exit.
 * Now: one line on stderr naming the cause, exit 74 (EX_IOERR), and the process is gone.
 */

function startWithStdoutClosed(): Promise<{ code: number | null; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', ADMIN_PORT: '0', LOG_LEVEL: 'info' };
  for (const name of ['REDIS_URL', 'REDIS_CLUSTER_NODES', 'CONTROL_PLANE_URL', 'AGENT_SERVER_URL', 'NODE_ENV'])
    delete env[name];
  const child = spawn(process.execPath, ['bin/gateway.js', 'start'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  // The reader goes away before the gateway writes anything: every write to stdout meets EPIPE.
  child.stdout.destroy();
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stderr });
    }),
  );
}

describe('gateway start with a closed stdout', () => {
  it('one line on stderr, exit 74, no stack trace, no hang', async () => {
    const r = await startWithStdoutClosed();
    expect(r.code, r.stderr).toBe(74);
    expect(r.stderr.trim().split('\n')).toEqual([
      'gateway start: stdout is closed (EPIPE): the log has nowhere to go; stopping (exit 74)',
    ]);
  }, 90_000);
});
