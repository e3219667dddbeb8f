import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SANDBOX_HOME } from '../../revision-host/local/sandbox/bwrap.ts';
import type { NetworkPlan } from '../../revision-host/local/sandbox/network.ts';
import { runCommand, type RunOptions } from './run-command.ts';
import { OUTBOUND_ENV, passedEnv } from './outbound-env.ts';

/**
 * The `git` CLI, run without a shell, non-interactively, with a time budget
 * and an abort signal. Only the transports a repository URL may use here are
 * allowed (no `ext::`, no remote helpers that run commands; local paths and
 * `file://` only when `localRepos` says so), nothing ever
 * prompts for credentials, and hooks never run: a bad or unreachable source
 * fails fast with git's own reason. Git runs in its own process group
 * (run-command.ts): a cancel or timeout stops its helpers too.
 *
 * Nothing of the gateway's reaches git: no system or global config (a `~/.gitconfig` a deployment wrote could rewrite
 * another tenant's repo_url with `insteadOf`, or run a `filter` with the gateway's environment), an empty HOME of its
 * own per run, and an environment of PATH plus what git and its transports need (proxy and CA settings). Redirects are
 * not followed (an allowed host answering 302 would reach any address), and the address the host check resolved is the
 * one curl connects to (`pin`), so a second DNS answer cannot point the clone elsewhere.
 *
 * With `sandbox`, git runs in the bubblewrap sandbox of a revision (src/services/revision-host/local/sandbox/bwrap.ts): the network, the system
 * read-only, its HOME (empty, its own), the folder it writes (`writable`: the clone's target) and a local repository
 * it reads; no other process, no other build folder, nothing of the gateway's. A git bug or a transport helper a
 * repository could steer then reaches nothing but the build it is making.
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
  'http.followRedirects=false',
].flatMap((c) => ['-c', c]);

const ENV: NodeJS.ProcessEnv = {
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_ATTR_NOSYSTEM: '1',
  GIT_TERMINAL_PROMPT: '0',
  GCM_INTERACTIVE: 'never',
  // -F /dev/null: no ssh_config from the shared HOME either (a ProxyCommand there would run as the gateway).
  GIT_SSH_COMMAND: 'ssh -F /dev/null -o BatchMode=yes -o ConnectTimeout=10',
  GIT_PROTOCOL_FROM_USER: '0',
  LC_ALL: 'C',
  LANGUAGE: 'C',
};

function gitEnv(home: string): NodeJS.ProcessEnv {
  return { ...passedEnv(OUTBOUND_ENV), ...ENV, HOME: home, XDG_CONFIG_HOME: home };
}

/** CA files the environment names, visible in the sandbox (where /etc/ssl is the only place otherwise). */
function caFiles(): string[] {
  return ['SSL_CERT_FILE', 'SSL_CERT_DIR'].flatMap((n) => (process.env[n] ? [process.env[n]] : []));
}

export class GitError extends Error {
  constructor(
    /** `over`: a bound of the build step (memory, processes, the checkout's size): the message says which. */
    readonly kind: 'failed' | 'timeout' | 'aborted' | 'over',
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
  /** `host:port:address[,address]` for curl (http.curloptResolve): the addresses the host check resolved. */
  readonly pin?: string | null;
  /** Run git in the bubblewrap sandbox (the gateway found one: SANDBOX). */
  readonly sandbox?: boolean;
  /** Its network in the sandbox (step-network.ts); default the host's. */
  readonly network?: NetworkPlan;
  /** The folder git writes in the sandbox (a clone's target, made beforehand); default `cwd`. */
  readonly writable?: string;
  /** Paths git reads in the sandbox besides the system (a local repository). */
  readonly readOnly?: readonly string[];
  /** The build step's bounds (step-bounds.ts, and the checkout's size): over one, git is killed. */
  readonly bound?: RunOptions['bound'];
}

/**
 * Runs `git <args>`; resolves with stdout, rejects with a GitError whose message is git's first error line (credentials
 * in URLs removed).
 */
export async function git(
  args: readonly string[],
  { cwd, timeoutMs, signal, localRepos = true, pin, sandbox, network, writable, readOnly = [], bound }: GitOptions,
): Promise<string> {
  const config = [...CONFIG, '-c', `protocol.file.allow=${localRepos ? 'always' : 'never'}`];
  if (pin) config.push('-c', `http.curloptResolve=${pin}`);
  const home = await mkdtemp(join(tmpdir(), 'gateway-git-home-'));
  // In the sandbox the empty HOME is mounted at SANDBOX_HOME; a command that writes nothing (ls-remote) works in it.
  const dir = writable ?? cwd ?? home;
  const run = sandbox
    ? {
        cwd: cwd ?? dir,
        env: gitEnv(SANDBOX_HOME),
        sandbox: { dir, home, network, readOnly: [...readOnly, ...caFiles()] },
      }
    : { cwd, env: gitEnv(home) };
  const result = await runCommand('git', [...config, ...args], { ...run, timeoutMs, signal, bound })
    .catch((err: Error) => {
      throw new GitError('failed', `git could not run: ${err.message}`);
    })
    .finally(() => rm(home, { recursive: true, force: true }));
  if (result.outcome === 'aborted') throw new GitError('aborted', 'git stopped: build cancelled');
  if (result.outcome === 'over') throw new GitError('over', `git ${args[0]}: ${result.over}`);
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
