import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isIPv4 } from 'node:net';

/**
 * A network namespace of its own for a sandboxed process (a revision, a build step): nothing of the host's network
 * is there (its loopback, other deployments, the gateway's listeners, the host's private networks), and egress to the
 * outside world goes through pasta (Debian's `passt`), which turns the namespace's packets into the host's ordinary
 * sockets without root.
 *
 * How: the command runs under `unshare --user --map-root-user --net` and a short shell script that first waits on a
 * pipe (fd NET_READY_FD). Meanwhile the host attaches pasta to that process's namespace (`attachEgress`): an
 * interface with the host's address and default route, no port forwarded either way, the gateway address not mapped
 * to the host, DNS forwarded from one address (DNS_ADDRESS) to the host's resolver. Told to go, the script (root of
 * that namespace, nothing more) routes the private, shared and link-local ranges and the host's own subnets to
 * `prohibit` (connects fail at once with EACCES), then execs the command, which bwrap puts in a user namespace of
 * its own without capabilities: the app cannot change those routes back.
 *
 * Modes: `pasta` (the above), `none` (the namespace with only its loopback: no egress at all), `host` (the host's
 * network, as before: tenants reach the host's loopback; only the gateway's own organisation runs there).
 */
export type NetworkMode = 'pasta' | 'none' | 'host';
export type NetworkSetting = 'auto' | NetworkMode;

/** The child's fd the script reads `go` on (then closes): the host has attached pasta. */
export const NET_READY_FD = 5;
/** Where the sandbox's resolver is (its resolv.conf names it); pasta forwards UDP port 53 there to the host's. */
export const DNS_ADDRESS = '169.254.0.53';
export const RESOLV_CONF = `nameserver ${DNS_ADDRESS}\n`;

/** Unreachable from a sandbox unless the operator allows a part (SANDBOX_NETWORK_ALLOW); the host's subnets too. */
export const PRIVATE_RANGES: readonly string[] = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '224.0.0.0/4',
  '240.0.0.0/4',
];

export interface NetworkPlan {
  readonly mode: NetworkMode;
  /** IPv4 CIDRs a sandbox may reach although private (an internal model gateway, a registry mirror). */
  readonly allow: readonly string[];
}

/** `a.b.c.d/n` with a valid address and prefix, or null. */
export function parseCidr(text: string): string | null {
  const m = /^(\d{1,3}(?:\.\d{1,3}){3})\/(\d{1,2})$/.exec(text.trim());
  if (!m || !isIPv4(m[1]!) || Number(m[2]) > 32) return null;
  return `${m[1]}/${Number(m[2])}`;
}

/**
 * The argv that runs `argv` in a network namespace of its own (modes `pasta` and `none`); `host` leaves it as it is.
 * The script's only inputs are checked CIDRs (parseCidr) and the fixed ranges above: nothing of a tenant's.
 */
export function netnsArgv(plan: NetworkPlan, argv: readonly string[]): string[] {
  if (plan.mode === 'host') return [...argv];
  const lines = [
    `read -r go <&${NET_READY_FD} && [ "$go" = go ] || exit 125`,
    `exec ${NET_READY_FD}<&-`,
    'set -e',
    'ip link set lo up',
  ];
  if (plan.mode === 'pasta') {
    const allow = plan.allow.map((c) => parseCidr(c) ?? '').filter((c) => c !== '');
    lines.push(
      'route=$(ip -4 route show default); gw=$(echo "$route" | cut -d" " -f3); dev=$(echo "$route" | cut -d" " -f5)',
      '[ -n "$gw" ] && [ -n "$dev" ] || { echo "sandbox network: no default route" >&2; exit 125; }',
      // The host's own subnets: the default route stays (onlink), the neighbours go.
      'for net in $(ip -4 route show proto kernel | cut -d" " -f1); do ip route del "$net" dev "$dev"; ip route replace prohibit "$net"; done',
      'ip route replace default via "$gw" dev "$dev" onlink',
      `for net in ${PRIVATE_RANGES.join(' ')}; do ip route replace prohibit "$net"; done`,
      `ip route replace ${DNS_ADDRESS}/32 via "$gw" dev "$dev" onlink`,
      ...allow.map((c) => `ip route replace ${c} via "$gw" dev "$dev" onlink`),
    );
  }
  lines.push('shift', 'exec "$@"');
  return [
    'unshare',
    '--user',
    '--map-root-user',
    '--net',
    '--',
    '/bin/sh',
    '-c',
    lines.join('\n'),
    'sh',
    '--',
    ...argv,
  ];
}

/** pasta's arguments for the namespace of process `pid`: no port forwarded either way, nothing of the host mapped. */
function pastaArgs(pid: number, pidFile: string): string[] {
  const runAs = process.getuid?.() === 0 ? ['--runas', '0'] : [];
  const none = ['-t', 'none', '-u', 'none', '-T', 'none', '-U', 'none'];
  const dns = ['--dns-forward', DNS_ADDRESS];
  return [...runAs, '--config-net', '-4', ...none, '--no-map-gw', ...dns, '-q', '-P', pidFile, String(pid)];
}

/**
 * Attaches pasta to the namespace of `pid` (a process started with netnsArgv, waiting on NET_READY_FD). pasta
 * configures the interface and goes to the background, where it stays as long as it lives (it holds the namespace):
 * resolves with what stops it, for the caller to call once the process has ended. Rejects with pasta's first line of
 * error.
 */
export async function attachEgress(pid: number, timeoutMs = 10_000): Promise<() => void> {
  await ownNamespace(pid, timeoutMs);
  const folder = mkdtempSync(join(tmpdir(), 'gateway-pasta-'));
  const pidFile = join(folder, 'pid');
  try {
    await runPasta(pastaArgs(pid, pidFile), timeoutMs);
    const daemon = Number(readFileSync(pidFile, 'utf8').trim());
    return () => {
      try {
        if (daemon > 0) process.kill(daemon, 'SIGTERM');
      } catch {
        // gone already
      }
    };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

function runPasta(args: string[], timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const pasta = spawn('pasta', args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: timeoutMs });
    let err = '';
    pasta.stderr.setEncoding('utf8').on('data', (d: string) => (err = (err + d).slice(-2000)));
    pasta.once('error', (e) =>
      reject(new Error(`pasta did not run (${(e as NodeJS.ErrnoException).code ?? e.message})`)),
    );
    pasta.once('exit', (code, signal) => {
      if (code === 0) return resolve();
      const line = err.split('\n').find((l) => l.trim() !== '' && !/syslog|ping_group_range|ICMP/.test(l));
      reject(new Error(`pasta failed: ${line?.trim() ?? (signal ? `killed by ${signal}` : `exit ${code}`)}`));
    });
  });
}

/**
 * Waits until `pid` is in a network namespace other than the gateway's (it has run `unshare`): pasta attached any
 * earlier would configure the host's own.
 */
async function ownNamespace(pid: number, timeoutMs: number): Promise<void> {
  const host = readlinkSync('/proc/self/ns/net');
  const until = Date.now() + timeoutMs;
  for (;;) {
    let ns: string;
    try {
      ns = readlinkSync(`/proc/${pid}/ns/net`);
    } catch {
      throw new Error('the process ended before its network was set up');
    }
    if (ns !== host) return;
    if (Date.now() > until) throw new Error('the process did not make its network namespace in time');
    await new Promise((r) => setTimeout(r, 2));
  }
}

/**
 * Decides the network once, at start, by making one namespace the way revisions get theirs (`auto`: pasta when it
 * works, else `host`). An explicit mode that does not work throws: the operator asked for it.
 */
export function probeNetwork(setting: NetworkSetting, allow: readonly string[]): Promise<NetworkProbe> {
  const key = `${setting} ${allow.join(',')}`;
  let probe = probes.get(key);
  if (probe === undefined) probes.set(key, (probe = probeOnce(setting, allow)));
  return probe;
}

/** One answer per process and setting: the host does not change under a running gateway. */
const probes = new Map<string, Promise<NetworkProbe>>();

async function probeOnce(setting: NetworkSetting, allow: readonly string[]): Promise<NetworkProbe> {
  if (setting === 'host') return { mode: 'host', why: 'SANDBOX_NETWORK=host' };
  const tried: NetworkMode = setting === 'auto' ? 'pasta' : setting;
  const why = await tryNamespace({ mode: tried, allow });
  if (why === null) return { mode: tried, why: null };
  if (setting !== 'auto') throw new Error(`SANDBOX_NETWORK=${setting}: ${why}`);
  return { mode: 'host', why };
}

export interface NetworkProbe {
  readonly mode: NetworkMode;
  /** Why no namespace is used (`host`), else null. */
  readonly why: string | null;
}

async function tryNamespace(plan: NetworkPlan): Promise<string | null> {
  const [cmd, ...args] = netnsArgv(plan, [
    '/bin/sh',
    '-c',
    'ip -4 route get 10.0.0.1 >/dev/null 2>&1 && exit 9; exit 0',
  ]);
  const stdio = Array.from({ length: NET_READY_FD + 1 }, (_, i) => (i === 2 || i === NET_READY_FD ? 'pipe' : 'ignore'));
  const child = spawn(cmd!, args, {
    stdio: stdio,
    env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
  });
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((resolve) => {
    child.once('error', () => resolve(null));
    child.once('exit', (code) => resolve(code));
  });
  try {
    if (child.pid === undefined) return `unshare did not run`;
    await releaseNetwork(child, plan);
  } catch (e) {
    child.kill('SIGKILL');
    await exited;
    return (e as Error).message;
  }
  const code = await exited;
  if (code === 0) return null;
  if (code === 9) return 'the namespace still routes to private ranges';
  const line = err.split('\n').find((l) => l.trim() !== '');
  return `could not make a network namespace (${line?.trim() ?? `exit ${code}`})`;
}

/**
 * Lets a process started with netnsArgv go on: pasta attached first when the plan has egress. Rejects (the caller ends
 * the process) when pasta fails.
 */
export async function releaseNetwork(child: ChildProcess, plan: NetworkPlan): Promise<void> {
  const ready = (child.stdio as unknown as NodeJS.WritableStream[])[NET_READY_FD]!;
  (ready as unknown as { on(e: 'error', f: () => void): void }).on('error', () => {});
  if (plan.mode === 'pasta' && child.pid !== undefined) {
    const stop = await attachEgress(child.pid);
    // pasta holds the namespace for as long as it runs: it goes with the process.
    if (child.exitCode !== null || child.signalCode !== null) stop();
    else child.once('exit', stop);
  }
  ready.end('go\n');
}

/** spawn's stdio for a process in a namespace of its own: `base`, then the pipe at NET_READY_FD. */
export function netnsStdio<T>(base: readonly T[], plan: NetworkPlan): (T | 'ignore' | 'pipe')[] {
  if (plan.mode === 'host') return [...base];
  const stdio: (T | 'ignore' | 'pipe')[] = [...base];
  while (stdio.length < NET_READY_FD) stdio.push('ignore');
  stdio[NET_READY_FD] = 'pipe';
  return stdio;
}

let resolvFolder: string | null = null;
/** A resolver file naming DNS_ADDRESS, made once per gateway process in a folder of its own (for build steps). */
export function resolvConfFile(): string {
  if (resolvFolder === null) {
    resolvFolder = mkdtempSync(join(tmpdir(), 'gateway-net-'));
    writeFileSync(join(resolvFolder, 'resolv.conf'), RESOLV_CONF);
    const folder = resolvFolder;
    process.once('exit', () => rmSync(folder, { recursive: true, force: true }));
  }
  return join(resolvFolder, 'resolv.conf');
}
