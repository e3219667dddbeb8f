import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/log.ts';
import { runControlPlane } from '../../../src/services/control-plane/main.ts';
import { LogCapture } from '../../helpers/gateway.ts';
import { client, imageBody } from './helpers.ts';

/**
 * The service alone, as `npx tsx src/services/control-plane/main.ts` runs it (here in process, stopped by a promise
 * instead of SIGTERM).
 */
describe('control plane main', () => {
  it('listens, prints the development key once on stdout (never in a log line), serves with it, and exits 0 when stopped', async () => {
    const workDir = mkdtempSync(join(tmpdir(), 'cp-main-'));
    const logs = new LogCapture();
    const stdout: string[] = [];
    let stop!: (why: string) => void;
    let listening!: (url: string) => void;
    const url = new Promise<string>((r) => (listening = r));
    const exit = runControlPlane(
      { CONTROL_PLANE_PORT: '0', NODE_ENV: 'development', BUILD_WORK_DIR: workDir },
      { log: (l) => stdout.push(l), err: (l) => stdout.push(`ERR ${l}`) },
      {
        stop: new Promise((r) => (stop = r)),
        listening,
        log: createLogger('info', logs.stream),
      },
    );
    try {
      const base = await url;
      const printed = stdout.join('\n');
      const key = /X-Api-Key: (gwk_\S+)/.exec(printed)?.[1];
      expect(key).toBeDefined();
      expect(printed).toContain('X-Tenant-Id: default');
      expect(printed.split(key!).length - 1).toBe(1);
      const res = await client(base, { key: key!, workspace: 'default' }).post('/deployments', imageBody());
      expect(res.status).toBe(201);
      await logs.waitFor((l) => l.msg === 'control plane listening');
      expect(logs.raw()).toContain('SECRETS_KEY is unset');
      expect(logs.raw()).not.toContain(key!);
    } finally {
      stop('test done');
      expect(await exit).toBe(0);
      rmSync(workDir, { recursive: true, force: true });
    }
    await expect(fetch(`${await url}/v2/deployments`)).rejects.toThrow();
  });

  it('exits 2 naming the variable when a setting is invalid', async () => {
    const lines: string[] = [];
    expect(
      await runControlPlane({ BUILD_CONCURRENCY: 'lots' }, { log: (l) => lines.push(l), err: (l) => lines.push(l) }),
    ).toBe(2);
    expect(lines).toEqual(['control plane: BUILD_CONCURRENCY: must be a whole number 1-64, got "lots"']);
  });
});
