import { runCommand } from './run-command.ts';

/**
 * The `git` CLI, run without a shell, non-interactively, with a time budget
 * and an abort signal. Only the transports a repository URL may use here are
 * allowed (no `ext::`, no remote helpers that run commands; local paths and
 * `file://` only when `localRepos` says so), nothing ever
 * prompts for credentials, and hooks never run: a bad or unreachable source
 * fails fast with git's own reason. Git runs in its own process group
 * (run-command.ts): a cancel or timeout stops its helpers too.
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
export async function git(
  args: readonly string[],
  { cwd, timeoutMs, signal, localRepos = true }: GitOptions,
): Promise<string> {
  const result = await runCommand(
    'git',
    [...CONFIG, '-c', `protocol.file.allow=${localRepos ? 'always' : 'never'}`, ...args],
    { cwd, env: ENV, timeoutMs, signal },
  ).catch((err: Error) => {
    throw new GitError('failed', `git could not run: ${err.message}`);
  });
  if (result.outcome === 'aborted') throw new GitError('aborted', 'git stopped: build cancelled');
  if (result.outcome === 'timeout') throw new GitError('timeout', `no answer within ${timeoutMs / 1000} s`);
  if (result.code !== 0)
    throw new GitError('failed', firstErrorLine(result.stderr) || `git exited with ${result.code}`);
  return result.stdout;
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
