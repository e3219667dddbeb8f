import { describe, expect, it } from 'vitest';
import { runCommand } from '../../../src/services/control-plane/builds/run-command.ts';
import { eventually } from './helpers.ts';

/**
 * Commands run in their own process group: a cancel or a timeout kills what
 * they started too (git's upload-pack, npm's scripts), and the result comes
 * only once nothing holds their output anymore.
 */

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('runCommand', () => {
  it('answers the exit code and the output', async () => {
    const r = await runCommand('sh', ['-c', 'echo out; echo err >&2; exit 3'], { timeoutMs: 10_000 });
    expect(r).toEqual({ outcome: 'exited', code: 3, stdout: 'out\n', stderr: 'err\n' });
  });

  it('a cancel kills the command and the processes it started', async () => {
    const abort = new AbortController();
    let child = 0;
    const r = await runCommand('sh', ['-c', 'sleep 30 & echo $!; wait'], {
      timeoutMs: 20_000,
      signal: abort.signal,
      onOutput: (text) => {
        child ||= Number(text.trim());
        abort.abort();
      },
    });
    expect(r.outcome).toBe('aborted');
    expect(child).toBeGreaterThan(0);
    await eventually(() => !alive(child), 5000, 'the background sleep gone');
  });

  it('a timeout does the same', async () => {
    const started = Date.now();
    const r = await runCommand('sh', ['-c', 'sleep 30 & wait'], { timeoutMs: 200 });
    expect(r.outcome).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('a command that cannot start rejects', async () => {
    await expect(runCommand('no-such-command-for-this-test', [], { timeoutMs: 1000 })).rejects.toThrow(/ENOENT/);
  });
});
