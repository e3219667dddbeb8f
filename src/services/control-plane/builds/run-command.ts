import { spawn } from 'node:child_process';
import { bwrapArgv, type SandboxSpec } from '../../../sandbox/bwrap.ts';

/**
 * Runs a command without a shell in its own process group, with a time
 * budget and an abort signal. On timeout or abort the whole group is killed
 * (SIGKILL), so helpers the command started (git's upload-pack and
 * index-pack, npm's scripts) stop with it, and the promise settles only on
 * 'close': once it has, nothing the command started writes anymore.
 * With `sandbox`, the command runs in the same bubblewrap sandbox as a
 * revision (src/sandbox/bwrap.ts): `cwd` is its only writable folder besides
 * its HOME and /tmp; `env` is all it gets.
 */
export interface RunOptions {
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** Output kept per stream, bytes (the first ones for stdout, the last ones for stderr); default 16 MiB. */
  readonly maxOutputBytes?: number;
  /** Each chunk of output as it comes (e.g. a build log). */
  readonly onOutput?: (text: string, stream: 'stdout' | 'stderr') => void;
  /**
   * Run it in the bubblewrap sandbox (needs `cwd`): HOME, /tmp and read-only paths as in SandboxSpec; `dir` is its
   * writable folder (default `cwd`, else a folder `cwd` is in).
   */
  readonly sandbox?: Pick<SandboxSpec, 'home' | 'tmp' | 'readOnly'> & { readonly dir?: string };
}

export interface RunResult {
  /** `exited`: the command ended by itself (see `code`); `timeout` / `aborted`: its group was killed. */
  readonly outcome: 'exited' | 'timeout' | 'aborted';
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** After the group is killed, how long 'close' may take (a process outside the group holding a pipe) before giving up. */
const CLOSE_GRACE_MS = 5000;

export function runCommand(command: string, args: readonly string[], options: RunOptions): Promise<RunResult> {
  const { cwd, env, timeoutMs, signal, maxOutputBytes = 16 * 1024 * 1024, onOutput, sandbox } = options;
  if (sandbox && cwd === undefined) return Promise.reject(new Error('runCommand: a sandboxed command needs its cwd'));
  const argv = sandbox ? bwrapArgv({ ...sandbox, command, args, dir: sandbox.dir ?? cwd!, cwd }) : [command, ...args];
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return resolve({ outcome: 'aborted', code: null, stdout: '', stderr: '' });
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
    });
    let outcome: RunResult['outcome'] = 'exited';
    let stdout = '';
    let stderr = '';
    let settled = false;
    let graceTimer: NodeJS.Timeout | undefined;
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      if (stdout.length < maxOutputBytes) stdout += text.slice(0, maxOutputBytes - stdout.length);
      onOutput?.(text, 'stdout');
    });
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr = (stderr + text).slice(-maxOutputBytes);
      onOutput?.(text, 'stderr');
    });

    const killGroup = (why: 'timeout' | 'aborted') => {
      if (settled || outcome !== 'exited') return;
      outcome = why;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // The group is already gone.
      }
      graceTimer = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        finish(null);
      }, CLOSE_GRACE_MS);
      graceTimer.unref();
    };
    const timer = setTimeout(() => killGroup('timeout'), timeoutMs);
    const onAbort = () => killGroup('aborted');
    signal?.addEventListener('abort', onAbort, { once: true });

    const finish = (code: number | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(graceTimer);
      signal?.removeEventListener('abort', onAbort);
      resolve({ outcome, code, stdout, stderr });
    };
    child.on('error', (err) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      reject(err);
    });
    child.on('close', (code) => finish(code));
  });
}
