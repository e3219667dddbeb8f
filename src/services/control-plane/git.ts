import { execFile } from 'node:child_process';

/**
 * The `git` CLI, run without a shell, non-interactively, with a time budget
 * and an abort signal. Only the transports a repository URL may use here are
 * allowed (no `ext::`, no remote helpers that run commands; local paths and
 * `file://` only when `localRepos` says so), nothing ever
 * prompts for credentials, and hooks never run: a bad or unreachable source
 * fails fast with git's own reason.
 */
const CONFIG = [
  'protocol.allow=never',
  'protocol.https.allow=always',
  'protocol.http.allow=always',
  'protocol.ssh.allow=always',
  'protocol.git.allow=always',
  'core.hooksPath=/dev/null',
  'advice.detachedHead=false',
  'http.lowSpeedLimit=1000',
  'http.lowSpeedTime=10',
].flatMap((c) => ['-c', c]);

const ENV: NodeJS.ProcessEnv = {
  ...process.env,
  GIT_TERMINAL_PROMPT: '0',
  GCM_INTERACTIVE: 'never',
  GIT_SSH_COMMAND: 'ssh -o BatchMode=yes -o ConnectTimeout=10',
  GIT_PROTOCOL_FROM_USER: '0',
  LC_ALL: 'C',
  LANGUAGE: 'C',
};

export class GitError extends Error {
  constructor(
    readonly kind: 'failed' | 'timeout' | 'aborted',
    message: string,
  ) {
    super(message);
    this.name = 'GitError';
  }
}

export interface GitOptions {
  readonly cwd?: string;
  /** Whether a local path or `file://` URL may be cloned (git's `protocol.file.allow`). Default: true. */
  readonly localRepos?: boolean;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

/**
 * Runs `git <args>`; resolves with stdout, rejects with a GitError whose message is git's first error line (credentials
 * in URLs removed).
 */
export function git(
  args: readonly string[],
  { cwd, timeoutMs, signal, localRepos = true }: GitOptions,
): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      [...CONFIG, '-c', `protocol.file.allow=${localRepos ? 'always' : 'never'}`, ...args],
      {
        cwd,
        env: ENV,
        timeout: timeoutMs,
        killSignal: 'SIGKILL',
        signal,
        maxBuffer: 16 * 1024 * 1024,
        windowsHide: true,
      },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        if (signal?.aborted || err.name === 'AbortError')
          return reject(new GitError('aborted', 'git stopped: build cancelled'));
        if ((err as { killed?: boolean }).killed)
          return reject(new GitError('timeout', `no answer within ${timeoutMs / 1000} s`));
        reject(new GitError('failed', firstErrorLine(String(stderr)) || err.message));
      },
    );
  });
}

/** The most telling line of git's stderr, without the `fatal: ` prefix. */
function firstErrorLine(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('warning:') && !l.startsWith('hint:'));
  const fatal = lines.find((l) => /^(fatal|error):/.test(l)) ?? lines[0] ?? '';
  return redactCredentials(fatal.replace(/^(fatal|error):\s*/, '')).slice(0, 300);
}

/** `https://user:token@host/x` → `https://***@host/x`: credentials never reach a status message or a log line. */
export function redactCredentials(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/\s@]+@/gi, '$1***@');
}
