import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * The argv that runs a command in a bubblewrap sandbox: its own user, PID,
 * IPC and UTS namespaces (no other process visible, no capability on the
 * host), the system read-only, a fresh /proc, /dev and /tmp, its folder
 * writable at the same path, its own HOME, and the few read-only paths it
 * needs (the gateway's code and node_modules). The network is the caller's:
 * a namespace of its own around bwrap (network.ts), or the host's.
 *
 * The environment is the spawned process's own (the caller builds it, minimal)
 * rather than `--clearenv` + `--setenv`: argv is world-readable in
 * /proc/<pid>/cmdline on the host, environ is readable by its owner only, and
 * secrets are part of that environment.
 */
export interface SandboxSpec {
  readonly command: string;
  readonly args: readonly string[];
  /** The folder the command works in (cwd), writable, at the same path inside. */
  readonly dir: string;
  /** Where the command starts, inside `dir` (an app in a subfolder of its checkout); default `dir`. */
  readonly cwd?: string;
  /** A writable HOME of its own, mounted at SANDBOX_HOME; default an empty tmpfs. */
  readonly home?: string;
  /** A writable /tmp of its own; default an empty tmpfs. */
  readonly tmp?: string;
  /** More paths visible read-only at the same path (symlinks resolved: the target is bound too). */
  readonly readOnly?: readonly string[];
  /** `dir` read-only (a revision's build: what it writes at run time goes to its bounded HOME and /tmp). */
  readonly dirReadOnly?: boolean;
  /** Bound of each tmpfs (HOME, /tmp) the sandbox gets, bytes; default the kernel's (half the memory). */
  readonly tmpfsBytes?: number;
  /** A file bound at /etc/resolv.conf instead of the host's (the resolver of a network namespace). */
  readonly resolvConf?: string;
}

/** Where the sandbox's HOME is (set HOME to it in the command's environment). */
export const SANDBOX_HOME = '/home/sandbox';

/** What DNS, TLS and user lookups read; nothing else of /etc (no host config, no secrets). */
const ETC = [
  '/etc/resolv.conf',
  '/etc/hosts',
  '/etc/nsswitch.conf',
  '/etc/passwd',
  '/etc/group',
  '/etc/ssl',
  '/etc/ca-certificates',
  '/etc/pki',
  '/etc/localtime',
];
/** The merged-/usr links of Debian and others; real folders on older layouts. */
const ROOT_DIRS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

export function bwrapArgv(spec: SandboxSpec): string[] {
  const a = ['bwrap', '--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try'];
  a.push('--die-with-parent', '--new-session', '--hostname', 'sandbox');
  a.push('--ro-bind', '/usr', '/usr');
  for (const d of ROOT_DIRS) a.push(...rootDir(d));
  for (const f of ETC) if (!(spec.resolvConf && f === '/etc/resolv.conf')) a.push('--ro-bind-try', f, f);
  if (spec.resolvConf) a.push('--ro-bind', spec.resolvConf, '/etc/resolv.conf');
  a.push('--proc', '/proc', '--dev', '/dev');
  // The tmpfs goes first: binds below /tmp (a build folder in the default BUILD_WORK_DIR) land on top of it.
  const tmpfs = (dest: string) => [...(spec.tmpfsBytes ? ['--size', String(spec.tmpfsBytes)] : []), '--tmpfs', dest];
  a.push(...(spec.tmp ? ['--bind', spec.tmp, '/tmp'] : tmpfs('/tmp')));
  a.push(...(spec.home ? ['--bind', spec.home, SANDBOX_HOME] : tmpfs(SANDBOX_HOME)));
  const runtime = runtimeDir();
  for (const p of [...(spec.readOnly ?? []), ...(runtime ? [runtime] : [])]) a.push(...readOnlyResolved(p));
  a.push(spec.dirReadOnly ? '--ro-bind' : '--bind', spec.dir, spec.dir);
  // bwrap's root is a tmpfs: read-only, so the only writable places are the folder, HOME and /tmp.
  a.push('--remount-ro', '/', '--chdir', spec.cwd ?? spec.dir);
  a.push('--', spec.command, ...spec.args);
  return a;
}

function rootDir(d: string): string[] {
  if (!existsSync(d)) return [];
  const st = lstatSync(d);
  if (st.isSymbolicLink()) return ['--symlink', readlinkSync(d), d];
  return st.isDirectory() ? ['--ro-bind', d, d] : [];
}

/** The path read-only; when it is (or sits under) a symlink, the real folder too, so both spellings resolve. */
function readOnlyResolved(p: string): string[] {
  if (!existsSync(p)) return [];
  const real = realpathSync(p);
  if (real === p) return ['--ro-bind', p, p];
  const link = lstatSync(p).isSymbolicLink() ? ['--symlink', real, p] : ['--ro-bind', real, p];
  return ['--ro-bind', real, real, ...link];
}

/** The folder of the running Node when it is not under /usr (an nvm or a downloaded build): the child runs it too. */
function runtimeDir(): string | null {
  const root = dirname(dirname(realpathSync(process.execPath)));
  return root === '/usr' || root.startsWith('/usr/') ? null : root;
}
