import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bwrapArgv } from './bwrap.ts';

/** SANDBOX: `auto` = bwrap when it works here, else none; `bwrap` = bwrap or refuse to start; `off` = none. */
export type SandboxSetting = 'auto' | 'bwrap' | 'off';
export type SandboxMode = 'bwrap' | 'off';

export interface SandboxProbe {
  readonly mode: SandboxMode;
  /** Why bwrap is not used (not installed, user namespaces refused, ...); null when it is. */
  readonly why: string | null;
}

/**
 * Decides the sandbox once, at start, by running `true` in the very sandbox
 * revisions get (a host without user namespaces fails here, not at the first
 * deployment). `bwrap` that does not work throws: the operator asked for it.
 */
export function probeSandbox(setting: SandboxSetting): SandboxProbe {
  if (setting === 'off') return { mode: 'off', why: 'SANDBOX=off' };
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-probe-'));
  try {
    const [cmd, ...args] = bwrapArgv({ command: 'true', args: [], dir });
    const r = spawnSync(cmd!, args, { encoding: 'utf8', timeout: 10_000, env: { PATH: '/usr/bin:/bin' } });
    const why =
      r.error !== undefined
        ? `bwrap did not run (${(r.error as NodeJS.ErrnoException).code ?? r.error.message})`
        : r.status !== 0
          ? `bwrap failed: ${(r.stderr || `exit ${r.status}`).trim().split('\n')[0]}`
          : null;
    if (why === null) return { mode: 'bwrap', why: null };
    if (setting === 'bwrap') throw new Error(`SANDBOX=bwrap: ${why}`);
    return { mode: 'off', why };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
