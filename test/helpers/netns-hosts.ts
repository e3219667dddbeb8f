import { execFileSync, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { mkdirSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';

/**
 * Separate hosts on one machine, for tests of gateway replicas that must not share a loopback: N network namespaces,
 * each with a veth pair whose other end is on a bridge of this run's own (a random 10.x.y.0/24 not routed here yet).
 * The bridge end (`bridgeAddress`, in the test's own namespace) is where a test binds what every host reaches (a
 * private Redis, a private PostgreSQL); host i is at `hosts[i].address`. A process runs inside one host through `ip
 * netns exec` (which execs, so the pid is the process's own) and is killed by that pid. `/etc/netns/<ns>/hosts` gives
 * a host names of its own (written before the process starts: `ip netns exec` binds it over /etc/hosts then).
 * Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN): `netnsRefused()` says why not, for a test to skip with. Everything is
 * removed by `remove()`, and by an exit hook should a test die first.
 */
export interface NetnsHost {
  /** The namespace's name (`ip netns exec <name>`). */
  readonly name: string;
  /** Its address on the bridge. */
  readonly address: string;
  /** The command prefix that runs a command inside this host: `ip netns exec <name>`. */
  readonly exec: readonly string[];
  /** Starts `argv` inside this host. The caller owns the child: kill it by its pid. */
  spawn(argv: readonly string[], options?: SpawnOptions): ChildProcess;
  /** Writes /etc/netns/<name>/hosts (`address name` lines): names that resolve inside processes started after. */
  writeHosts(entries: Record<string, string>): void;
}

export interface NetnsHosts {
  /** The bridge's address (x.x.x.1): the test's own namespace, reached by every host. */
  readonly bridgeAddress: string;
  /** The /24 of this run, e.g. `10.137.42.0/24`. */
  readonly subnet: string;
  readonly hosts: readonly NetnsHost[];
  /** Deletes the namespaces, the veth pairs with them, the bridge and /etc/netns/<name>. Idempotent. */
  remove(): void;
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();

/** Null when namespaces can be made here, else why not (for `describe.skipIf`). */
export function netnsRefused(): string | null {
  const probe = `nsprobe-${randomBytes(3).toString('hex')}`;
  try {
    ip('netns', 'add', probe);
    ip('netns', 'del', probe);
    return null;
  } catch (err) {
    const e = err as { stderr?: Buffer; message: string };
    return `ip netns add is refused here (${(e.stderr?.toString() ?? e.message).trim().split('\n')[0]}): needs root`;
  }
}

/** A 10.x.y.0/24 nothing here routes yet: the octets random, so two runs (or two tests) never share one. */
function freeSubnet(): string {
  const routes = ip('-4', 'route', 'show', 'table', 'all');
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = `10.${randomInt(100, 250)}.${randomInt(1, 255)}`;
    if (!routes.includes(`${base}.`)) return base;
  }
  throw new Error('no free 10.x.y.0/24 found for the netns bridge');
}

const live = new Set<NetnsHosts>();
process.once('exit', () => live.forEach((h) => h.remove()));

export function startNetnsHosts(count: number): NetnsHosts {
  const tag = randomBytes(2).toString('hex'); // interface names have at most 15 characters
  const base = freeSubnet();
  const bridge = `kbr${tag}`;
  const bridgeAddress = `${base}.1`;
  const names: string[] = [];
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    live.delete(hosts);
    for (const name of names) {
      try {
        ip('netns', 'del', name); // its end of the pair goes with it, and so the bridge's end
      } catch {
        // already gone
      }
      rmSync(`/etc/netns/${name}`, { recursive: true, force: true });
    }
    try {
      rmdirSync('/etc/netns'); // only when empty: another run's hosts files stay
    } catch {
      // not empty, or never made
    }
    try {
      ip('link', 'del', bridge);
    } catch {
      // already gone
    }
  };
  const hosts: NetnsHosts = { bridgeAddress, subnet: `${base}.0/24`, hosts: [], remove };
  live.add(hosts);
  try {
    ip('link', 'add', bridge, 'type', 'bridge');
    ip('addr', 'add', `${bridgeAddress}/24`, 'dev', bridge);
    ip('link', 'set', bridge, 'up');
    for (let i = 0; i < count; i++) {
      const name = `kh-${tag}-${i}`;
      const outside = `kv${tag}${i}`;
      const address = `${base}.${i + 2}`;
      ip('netns', 'add', name);
      names.push(name);
      ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', name);
      ip('link', 'set', outside, 'master', bridge);
      ip('link', 'set', outside, 'up');
      ip('-n', name, 'addr', 'add', `${address}/24`, 'dev', 'eth0');
      ip('-n', name, 'link', 'set', 'eth0', 'up');
      ip('-n', name, 'link', 'set', 'lo', 'up');
      (hosts.hosts as NetnsHost[]).push(host(name, address));
    }
  } catch (err) {
    remove();
    throw err;
  }
  return hosts;
}

function host(name: string, address: string): NetnsHost {
  const exec = ['ip', 'netns', 'exec', name];
  return {
    name,
    address,
    exec,
    spawn: (argv, options = {}) => spawn(exec[0]!, [...exec.slice(1), ...argv], options),
    writeHosts: (entries) => {
      mkdirSync(`/etc/netns/${name}`, { recursive: true });
      const lines = ['127.0.0.1 localhost', ...Object.entries(entries).map(([n, a]) => `${a} ${n}`)];
      writeFileSync(`/etc/netns/${name}/hosts`, `${lines.join('\n')}\n`);
    },
  };
}
