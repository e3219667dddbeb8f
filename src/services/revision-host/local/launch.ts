import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bwrapArgv, SANDBOX_HOME } from './sandbox/bwrap.ts';
import { joinArgv, type CgroupParent, type RevisionCgroup } from './sandbox/cgroup.ts';
import { netnsArgv, type NetworkPlan } from './sandbox/network.ts';
import type { SandboxMode } from './sandbox/probe.ts';
import { MEMORY_OVERHEAD_MB, type RevisionSpec } from '../revision-host.ts';

/**
 * How a revision's process is spawned: node under tsx running
 * agent-process.ts, in the bubblewrap sandbox when there is one (its build
 * folder read-only, HOME and /tmp bounded tmpfs), in a network namespace of
 * its own when the host can make one (network.ts), in a cgroup of its own when
 * the gateway can make one (else RLIMIT_DATA through `prlimit`) inside its
 * organisation's group (ORG_CPUS for all its revisions and builds: cgroup.ts),
 * with an environment made here from nothing but a few neutral variables of
 * the gateway, NODE_PATH, the app's env and secrets and the host's own (its
 * database's URI). The order, outermost
 * first: cgroup, network namespace, bwrap, node.
 */
export interface Launch {
  readonly command: string;
  readonly args: string[];
  readonly env: NodeJS.ProcessEnv;
  readonly cgroup: RevisionCgroup | null;
}

const ENTRY = fileURLToPath(new URL('./agent-process.ts', import.meta.url));
const TSX = import.meta.resolve('tsx');
const GATEWAY = fileURLToPath(new URL('../../../../', import.meta.url));
const GATEWAY_MODULES = `${GATEWAY}node_modules`;
/** Variables of the gateway a process inherits; nothing else (no SECRETS_KEY, REDIS_URL, HOME, ...). */
const INHERITED = ['PATH', 'NODE_ENV', 'TZ', 'LANG'];
export const MAX_PIDS = 256;
export const MAX_CPUS = 1;
/** Bound of the revision's HOME and of its /tmp (tmpfs, counted in its cgroup's memory too). */
export const TMPFS_BYTES = 256 * 1024 * 1024;
let started = 0;

/** Where a revision's process runs, beside its spec. */
export interface LaunchPlace {
  readonly sandbox: SandboxMode;
  readonly network: NetworkPlan;
  readonly cgroups: CgroupParent | null;
  /** CPUs of the organisation's group (ORG_CPUS); default MAX_CPUS. */
  readonly orgCpus?: number;
  /** The revision's run folder, the host's: `home` (HOME and TMPDIR without bwrap) and `resolv.conf` in it. */
  readonly runDir: string;
  /** Folders of the host the process reaches read-only, at the same path (its Redis and database sockets'). */
  readonly hostFolders?: readonly string[];
  /** Variables the host sets last, over the app's (DATABASE_URI, DATABASE_POOL_SIZE: revision-database.ts). */
  readonly hostEnv?: Readonly<Record<string, string>>;
}

export function launchArgv(spec: RevisionSpec, place: LaunchPlace): Launch {
  const { sandbox, network, cgroups, orgCpus = MAX_CPUS, runDir, hostFolders = [], hostEnv = {} } = place;
  const ownHome = join(runDir, 'home');
  const memoryBytes = (spec.memoryMb + MEMORY_OVERHEAD_MB) * 1024 * 1024;
  const env: NodeJS.ProcessEnv = {};
  for (const name of INHERITED) if (process.env[name] !== undefined) env[name] = process.env[name];
  // Without a sandbox HOME is still not the gateway's: the gateway's ~/.gitconfig and ~/.npmrc are not the app's.
  const inBwrap = sandbox === 'bwrap';
  Object.assign(env, { HOME: inBwrap ? SANDBOX_HOME : ownHome, TMPDIR: inBwrap ? '/tmp' : ownHome });
  env.NODE_PATH = GATEWAY_MODULES;
  Object.assign(env, spec.env, hostEnv);
  let argv = [process.execPath, '--import', TSX, `--max-old-space-size=${spec.memoryMb}`, ENTRY];
  if (sandbox === 'bwrap') {
    argv = bwrapArgv({
      command: argv[0]!,
      args: argv.slice(1),
      dir: spec.appDir,
      dirReadOnly: true,
      tmpfsBytes: TMPFS_BYTES,
      readOnly: [`${GATEWAY}src`, `${GATEWAY}package.json`, GATEWAY_MODULES, realModule(TSX), ...hostFolders],
      ...(network.mode !== 'host' && { resolvConf: join(runDir, 'resolv.conf') }),
    });
  }
  argv = netnsArgv(network, argv);
  let cgroup: RevisionCgroup | null = null;
  try {
    // One group per process, not per revision: a redeploy starts the revision again while its old process drains.
    // A deployment no organisation owns (org null) shares one group with the others like it.
    const org = cgroups?.org(spec.org ?? '\u0000none', orgCpus);
    cgroup = org?.create(`${spec.revisionId}.${++started}`, { memoryBytes, pids: MAX_PIDS, cpus: MAX_CPUS }) ?? null;
  } catch {
    cgroup = null; // the kernel refused a limit: RLIMIT_DATA below still bounds its memory
  }
  if (cgroup) argv = joinArgv(cgroup.procsFiles, argv);
  else argv = ['prlimit', `--data=${memoryBytes}`, '--', ...argv];
  return { command: argv[0]!, args: argv.slice(1), env, cgroup };
}

/** The package folder of a resolved module URL (tsx may resolve through a symlinked node_modules). */
function realModule(url: string): string {
  const path = fileURLToPath(url);
  const at = path.lastIndexOf('/node_modules/');
  return at === -1 ? path : path.slice(0, at + '/node_modules'.length);
}
