import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { UNCAUGHT_EXIT_CODE } from '../../src/process/guards.ts';

/**
 * Finding "one request ends the whole process", its process-level policy: an unhandled rejection is logged (fatal,
 * with its stack) and the process keeps serving; an uncaught exception is logged and exits 70 for the supervisor
 * to restart it. Without a policy Node ends at the first unhandled rejection (exit 1, no log line of ours).
 */
const CHILD = fileURLToPath(new URL('./fixtures/unexpected-failures.ts', import.meta.url));
const TSX = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));

describe('the process-level policy for the unexpected', () => {
  it('logs an unhandled rejection and keeps serving; logs an uncaught exception and exits 70', async () => {
    const { code, stdout } = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = execFile(TSX, [CHILD], { timeout: 20_000 }, (_err, stdout) =>
        resolve({ code: child.exitCode, stdout }),
      );
    });
    const lines = stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: number | string; msg: string; err?: { message: string; stack?: string } });
    const rejection = lines.find((l) => /unhandled promise rejection/.test(l.msg));
    expect(rejection?.err?.message).toBe('lost rejection');
    expect(rejection?.err?.stack).toMatch(/unexpected-failures\.ts/);
    expect(stdout).toContain('still serving');
    const thrown = lines.find((l) => /uncaught exception/.test(l.msg));
    expect(thrown?.err?.message).toBe('thrown from a callback');
    expect(stdout).not.toContain('never printed');
    expect(code).toBe(UNCAUGHT_EXIT_CODE);
  }, 30_000);
});
