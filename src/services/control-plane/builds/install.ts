import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { BuildFailure } from './app-config.ts';
import { runCommand } from './run-command.ts';

/**
 * Installs an app's dependencies when its checkout has a package.json (next
 * to the app config): `npm ci` with a lockfile, else `npm install`. npm runs
 * in its own process group with a time budget (killed as a group on cancel
 * or timeout) and without the gateway's environment; its output is the
 * revision's build log. An app without a package.json installs nothing (it
 * runs on the gateway's own @langchain packages).
 */
export interface InstallResult {
  /** What ran and what it printed (the end of it when long); null when nothing was installed. */
  readonly log: string | null;
}

export const BUILD_LOG_MAX = 64 * 1024;

const NPM_ENV = [
  'PATH',
  'HOME',
  'TMPDIR',
  'LANG',
  'npm_config_cache',
  'npm_config_registry',
  'HTTPS_PROXY',
  'NO_PROXY',
];

export async function installDependencies(
  appDir: string,
  { timeoutMs, signal }: { timeoutMs: number; signal?: AbortSignal },
): Promise<InstallResult> {
  if (!existsSync(join(appDir, 'package.json'))) return { log: null };
  const locked = existsSync(join(appDir, 'package-lock.json')) || existsSync(join(appDir, 'npm-shrinkwrap.json'));
  const args = [locked ? 'ci' : 'install', '--no-audit', '--no-fund', '--no-update-notifier'];
  const env: NodeJS.ProcessEnv = { NODE_ENV: 'development', CI: 'true' };
  for (const name of NPM_ENV) if (process.env[name] !== undefined) env[name] = process.env[name];
  let log = `$ npm ${args.join(' ')}\n`;
  const result = await runCommand('npm', args, {
    cwd: appDir,
    env,
    timeoutMs,
    signal,
    onOutput: (text) => {
      log = (log + text).slice(-BUILD_LOG_MAX);
    },
  }).catch((err: Error) => {
    throw new BuildFailure(`npm could not run: ${err.message}`);
  });
  if (result.outcome === 'aborted') throw new InstallCancelled();
  if (result.outcome === 'timeout')
    throw new InstallFailure(`npm ${args[0]}: no result within ${Math.round(timeoutMs / 1000)} s`, log);
  if (result.code !== 0) {
    // Paths inside the build folder as the app knows them (the folder's place on this host is not the user's concern).
    // npm itself masks UUIDs (they may be tokens), so the folder's ids may show as `***`.
    const masked = appDir.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '***');
    const why = (lastErrorLine(result.stderr) ?? `exit code ${result.code}`)
      .replaceAll(appDir, '.')
      .replaceAll(masked, '.');
    throw new InstallFailure(`npm ${args[0]} failed: ${why}`, log);
  }
  return { log };
}

/** npm failed: the reason for the status message, and the log so far. */
export class InstallFailure extends BuildFailure {
  constructor(
    reason: string,
    readonly log: string,
  ) {
    super(reason);
  }
}

export class InstallCancelled extends Error {}

/** npm's own reason: its first `npm error` line that is not bookkeeping (code, syscall, path, errno, log file). */
function lastErrorLine(stderr: string): string | null {
  const lines = stderr
    .split('\n')
    .filter((l) => /^npm (error|ERR!)/.test(l))
    .map((l) => l.replace(/^npm (error|ERR!)\s*/, '').trim())
    .filter((l) => l !== '' && !/^(code|syscall|path|errno|signal|command|cwd) |^A complete log of this run/.test(l));
  return lines[0]?.slice(0, 300) ?? null;
}
