import { spawn } from 'node:child_process';
import { bwrapArgv, type SandboxSpec } from '../../revision-host/local/sandbox/bwrap.ts';
import {
  netnsArgv,
  netnsStdio,
  releaseNetwork,
  resolvConfFile,
  type NetworkPlan,
} from '../../revision-host/local/sandbox/network.ts';

/**
 * Runs a command without a shell in its own process group, with a time
 * budget and an abort signal. On timeout or abort the whole group is killed
 * (SIGKILL), so helpers the command started (git's upload-pack and
 * index-pack, npm's scripts) stop with it, and the promise settles only on
 * 'close': once it has, nothing the command started writes anymore.
 * With `sandbox`, the command runs in the same bubblewrap sandbox as a
 * revision (src/services/revision-host/local/sandbox/bwrap.ts): `cwd` is its only writable folder besides
 * its HOME and /tmp; `env` is all it gets; and in a network namespace of its
 * own when `sandbox.network` says so (src/services/revision-host/local/sandbox/network.ts).
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
  readonly sandbox?: Pick<SandboxSpec, 'home' | 'tmp' | 'readOnly'> & {
    readonly dir?: string;
    /** Its network: a namespace of its own (`pasta`, `none`) or the host's (`host`, the default). */
    readonly network?: NetworkPlan;
  };
  /** The step's bounds: its argv wrapped (cgroup, prlimit), and why it is over them (or null), asked as it runs. */
  readonly bound?: {
    wrap(argv: readonly string[]): string[];
    over(): string | null | Promise<string | null>;
    /** Kills every process of the step (its cgroup): one that left the process group (a new session) too. */
    kill?(): void;
  };
}

export interface RunResult {
  /** `exited`: the command ended by itself (see `code`); `timeout` / `aborted` / `over`: its group was killed. */
  readonly outcome: 'exited' | 'timeout' | 'aborted' | 'over';
  /** With `over`: which bound, one line (and when it exited on its own but went over one, e.g. a process OOM-killed). */
  readonly over?: string;
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** After the group is killed, how long 'close' may take (a process outside the group holding a pipe) before giving up. */
const CLOSE_GRACE_MS = 5000;
/** How often a bounded command's `over` is asked: what a checkout can write past its size in this time is its slack. */
const OVER_EVERY_MS = 200;

export function runCommand(command: string, args: readonly string[], options: RunOptions): Promise<RunResult> {
  const { cwd, env, timeoutMs, signal, maxOutputBytes = 16 * 1024 * 1024, onOutput, sandbox, bound } = options;
  if (sandbox && cwd === undefined) return Promise.reject(new Error('runCommand: a sandboxed command needs its cwd'));
  const network: NetworkPlan = sandbox?.network ?? { mode: 'host', allow: [] };
  const resolv = network.mode === 'host' ? {} : { resolvConf: resolvConfFile() };
  const boxed = sandbox
    ? bwrapArgv({ ...sandbox, ...resolv, command, args, dir: sandbox.dir ?? cwd!, cwd })
    : [command, ...args];
  const inner = netnsArgv(network, boxed);
  const argv = bound ? bound.wrap(inner) : inner;
  return new Promise<RunResult>((resolve, reject) => {
    if (signal?.aborted) return resolve({ outcome: 'aborted', code: null, stdout: '', stderr: '' });
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd,
      env,
      detached: true,
      stdio: netnsStdio(['ignore', 'pipe', 'pipe'], network),
      windowsHide: true,
    });
    let outcome: RunResult['outcome'] = 'exited';
    let over: string | undefined;
    let stdout = '';
    let stderr = '';
    let settled = false;
    let graceTimer: NodeJS.Timeout | undefined;
    child.stdout!.setEncoding('utf8').on('data', (text: string) => {
      if (stdout.length < maxOutputBytes) stdout += text.slice(0, maxOutputBytes - stdout.length);
      onOutput?.(text, 'stdout');
    });
    child.stderr!.setEncoding('utf8').on('data', (text: string) => {
      stderr = (stderr + text).slice(-maxOutputBytes);
      onOutput?.(text, 'stderr');
    });
    // In a namespace of its own it waits (network.ts) until pasta is attached; a failure ends its group, saying why.
    if (network.mode !== 'host')
      releaseNetwork(child, network).catch((err: Error) => {
        stderr += `its network could not be set up: ${err.message}\n`;
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        } catch {
          // gone already
        }
      });

    const killGroup = (why: 'timeout' | 'aborted' | 'over') => {
      if (settled || outcome !== 'exited') return;
      outcome = why;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // The group is already gone.
      }
      bound?.kill?.();
      graceTimer = setTimeout(() => {
        child.stdout!.destroy();
        child.stderr!.destroy();
        finish(null);
      }, CLOSE_GRACE_MS);
      graceTimer.unref();
    };
    const timer = setTimeout(() => killGroup('timeout'), timeoutMs);
    const onAbort = () => killGroup('aborted');
    signal?.addEventListener('abort', onAbort, { once: true });
    let asking = false;
    const watch = bound
      ? setInterval(() => {
          if (asking || settled || outcome !== 'exited') return;
          asking = true;
          void Promise.resolve(bound.over())
            .then((why) => {
              if (why === null || settled || outcome !== 'exited') return;
              over = why;
              killGroup('over');
            })
            .catch(() => {})
            .finally(() => (asking = false));
        }, OVER_EVERY_MS)
      : undefined;

    const finish = (code: number | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(graceTimer);
      clearInterval(watch);
      signal?.removeEventListener('abort', onAbort);
      resolve({ outcome, code, stdout, stderr, ...(over !== undefined && { over }) });
    };
    child.on('error', (err) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearInterval(watch);
      signal?.removeEventListener('abort', onAbort);
      reject(err);
    });
    child.on('close', (code) => finish(code));
  }).then(async (result) => {
    // Ended by itself, but a bound was hit on the way (the OOM killer took one of its processes, a fork failed): that
    // is the reason a person needs, not the command's own last words.
    if (!bound || result.outcome !== 'exited' || result.code === 0) return result;
    const why = await Promise.resolve(bound.over()).catch(() => null);
    return why === null ? result : { ...result, outcome: 'over' as const, over: why };
  });
}
