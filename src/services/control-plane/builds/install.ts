import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BuildFailure } from './app-config.ts';
import { folderBytes, mib } from './folder-size.ts';
import { SANDBOX_HOME } from '../../revision-host/local/sandbox/bwrap.ts';
import type { NetworkPlan } from '../../revision-host/local/sandbox/network.ts';
import { runCommand } from './run-command.ts';
import type { BuildLimits } from './step-bounds.ts';
import { OUTBOUND_ENV, passedEnv } from './outbound-env.ts';

/**
 * Installs an app's dependencies when its checkout has a package.json (next
 * to the app config): `npm ci` with a lockfile, else `npm install`. npm runs
 * in its own process group with a time budget (killed as a group on cancel
 * or timeout) and without the gateway's environment; its output is the
 * revision's build log. An app without a package.json installs nothing (it
 * runs on the gateway's own @langchain packages).
 *
 * Install scripts (the dependencies' and the app's own `preinstall`, `postinstall`, `prepare`...) do not run
 * (`--ignore-scripts`) unless the app config says `"install_scripts": true`: the key sits in `langgraph.json` next to
 * the graphs it builds, where a reviewer of the repository sees it, and a package that needs a native build says so
 * in the build log. npm reads no config of the gateway's: its own empty HOME (no `~/.npmrc`), no global npmrc, a
 * cache of its own unless the operator sets npm_config_cache; only the app's own `.npmrc` applies, and a command-line
 * flag outranks it. Past `maxBytes` of `node_modules` the install fails with the size in its reason.
 *
 * With `limits`, npm and its scripts run in a cgroup of their own in the organisation's (step-bounds.ts): over its
 * memory or processes npm is killed and the build fails saying which. The build folder is watched as npm writes it
 * (every 200 ms, run-command.ts): past `maxBytes` more than the checkout, npm is killed.
 *
 * With `sandbox`, npm (and every script it runs) is in the bubblewrap sandbox of a revision: the network, the system
 * read-only, the checkout writable, a /tmp and a HOME of its own per build (its npm cache: an operator's
 * npm_config_cache is not passed, as it would be shared by every tenant); no other process, no other build, nothing
 * of the gateway's. Without it, scripts run as the gateway's user: only for tenants the gateway trusts (builds.ts).
 */
export interface InstallResult {
  /** What ran and what it printed (the end of it when long); null when nothing was installed. */
  readonly log: string | null;
}

export const BUILD_LOG_MAX = 64 * 1024;

/** Besides the network's variables, what npm may take from the gateway's environment. */
const NPM_ENV = [...OUTBOUND_ENV, 'TMPDIR', 'LANG', 'npm_config_cache', 'npm_config_registry'];

/** Default most bytes of `node_modules` (NODE_MODULES_MAX_MB, passed by the builds). */
export const INSTALL_MAX_BYTES = 2048 * 1024 * 1024;

export interface InstallOptions {
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** Most bytes `node_modules` may take; default INSTALL_MAX_BYTES. */
  readonly maxBytes?: number;
  /** The app config's file name in `appDir` (its `install_scripts`); default `langgraph.json`. */
  readonly configFile?: string;
  /** Run npm in the bubblewrap sandbox (the gateway found one: SANDBOX). */
  readonly sandbox?: boolean;
  /** Its network in the sandbox (network.ts); default the host's. */
  readonly network?: NetworkPlan;
  /** The folder npm may write in the sandbox: the checkout `appDir` is in; default `appDir`. */
  readonly writable?: string;
  /** Each piece of the log as it comes (the build log's live view, build-progress.ts). */
  readonly onOutput?: (text: string) => void;
  /** The build steps' bounds (BUILD_MEMORY_MB, BUILD_MAX_PIDS, BUILD_CPUS, ORG_CPUS); default none but the sizes. */
  readonly limits?: BuildLimits;
  /** The organisation whose cgroup the step runs in. */
  readonly org?: string | null;
}

export async function installDependencies(
  appDir: string,
  {
    timeoutMs,
    signal,
    maxBytes = INSTALL_MAX_BYTES,
    configFile = 'langgraph.json',
    sandbox = false,
    network,
    writable = appDir,
    onOutput,
    limits,
    org = null,
  }: InstallOptions,
): Promise<InstallResult> {
  if (!existsSync(join(appDir, 'package.json'))) return { log: null };
  const locked = existsSync(join(appDir, 'package-lock.json')) || existsSync(join(appDir, 'npm-shrinkwrap.json'));
  const scripts = await installScripts(join(appDir, configFile));
  const args = [locked ? 'ci' : 'install', '--no-audit', '--no-fund', '--no-update-notifier'];
  if (!scripts) args.push('--ignore-scripts');
  const home = await mkdtemp(join(tmpdir(), 'gateway-npm-home-'));
  // In the sandbox the same folder is the HOME at SANDBOX_HOME.
  const own = sandbox ? SANDBOX_HOME : home;
  const env: NodeJS.ProcessEnv = {
    NODE_ENV: 'development',
    CI: 'true',
    HOME: own,
    npm_config_userconfig: join(own, '.npmrc'),
    npm_config_globalconfig: join(own, 'npmrc'),
    npm_config_cache: join(own, '.npm'),
  };
  Object.assign(env, passedEnv(NPM_ENV));
  if (sandbox) {
    env.TMPDIR = '/tmp';
    env.npm_config_cache = join(own, '.npm');
  }
  const caFiles = ['SSL_CERT_FILE', 'NODE_EXTRA_CA_CERTS'].flatMap((n) => (process.env[n] ? [process.env[n]] : []));
  let log = '';
  const print = (text: string) => {
    log = (log + text).slice(-BUILD_LOG_MAX);
    onOutput?.(text);
  };
  print(`$ npm ${args.join(' ')}\n`);
  if (!scripts) print('(install scripts off: "install_scripts": true in the app config runs them)\n');
  const tooBig = `npm ${args[0]}: node_modules is over its limit of ${mib(maxBytes)}`;
  // What the checkout weighs now, so the watch sees what the install adds (its scripts may write anywhere in it).
  const before = await folderBytes(writable, Number.MAX_SAFE_INTEGER);
  const step = limits?.step(org, 'npm');
  const bound = {
    wrap: (argv: readonly string[]) => step?.wrap(argv) ?? [...argv],
    over: async () =>
      step?.over() ?? ((await folderBytes(writable, before + maxBytes)) > before + maxBytes ? tooBig : null),
    kill: () => step?.kill(),
  };
  const result = await runCommand('npm', args, {
    cwd: appDir,
    env,
    sandbox: sandbox ? { dir: writable, home, network, readOnly: caFiles } : undefined,
    timeoutMs,
    signal,
    onOutput: print,
    bound,
  })
    .catch((err: Error) => {
      throw new BuildFailure(`npm could not run: ${err.message}`);
    })
    .finally(() => {
      step?.release();
      return rm(home, { recursive: true, force: true });
    });
  if (result.outcome === 'aborted') throw new InstallCancelled();
  if (result.outcome === 'over') {
    const why = result.over === tooBig ? tooBig : `npm ${args[0]}: ${result.over}`;
    print(`\n${why}\n`);
    throw new InstallFailure(why, log);
  }
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
  const size = await folderBytes(join(appDir, 'node_modules'), maxBytes);
  if (size > maxBytes) throw new InstallFailure(tooBig, log);
  return { log };
}

/** `"install_scripts": true` in the app config (checked to be a boolean by the build, app-config.ts). */
async function installScripts(configFile: string): Promise<boolean> {
  try {
    return (JSON.parse(await readFile(configFile, 'utf8')) as { install_scripts?: unknown }).install_scripts === true;
  } catch {
    return false;
  }
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
