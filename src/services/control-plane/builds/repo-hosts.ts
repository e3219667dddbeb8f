import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * Where a `repo_url` may point (NODE_ENV=production): not at loopback, private, link-local or otherwise reserved
 * addresses, which would let a deployment probe the gateway's own network (a clone's error tells an open port from a
 * closed one). The host is resolved (every address) when a deployment is created or patched and again right before
 * the clone; every address must be public, or the host (`host`, `host:port`) or an address (IP, CIDR) be named in
 * REPO_HOSTS_ALLOWED. Local paths and `file://` are LOCAL_REPOS's to decide.
 */
export interface RepoHostPolicy {
  /** Why `url` may not be cloned (naming repo_url and the host, never credentials), or null. */
  check(url: string): Promise<string | null>;
  /**
   * The same check, right before git runs; when it passed on addresses it resolved, `pin` holds them for curl
   * (`host:port:address,...`, git.ts), so git connects to what was checked and nothing a later DNS answer names.
   */
  admit(url: string): Promise<{ readonly refused: string } | { readonly refused: null; readonly pin: string | null }>;
}

export const ANY_REPO_HOST: RepoHostPolicy = {
  check: async () => null,
  admit: async () => ({ refused: null, pin: null }),
};

const RESERVED: [string, number, 'ipv4' | 'ipv6'][] = [
  ['0.0.0.0', 8, 'ipv4'],
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['127.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'],
  ['192.0.2.0', 24, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'],
  ['198.51.100.0', 24, 'ipv4'],
  ['203.0.113.0', 24, 'ipv4'],
  ['224.0.0.0', 3, 'ipv4'], // multicast, reserved, broadcast
  ['::', 127, 'ipv6'], // :: and ::1
  ['64:ff9b::', 96, 'ipv6'], // NAT64: any IPv4 behind it
  ['100::', 64, 'ipv6'],
  ['2001:db8::', 32, 'ipv6'],
  ['fc00::', 7, 'ipv6'],
  ['fe80::', 10, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
];
const reserved = new BlockList();
for (const [net, bits, family] of RESERVED) reserved.addSubnet(net, bits, family);

const DEFAULT_PORTS: Record<string, number> = { http: 80, https: 443, ssh: 22, git: 9418 };

/** `allowed`: REPO_HOSTS_ALLOWED entries, checked by `repoHostsAllowed`. */
export function repoHostPolicy(allowed: readonly string[]): RepoHostPolicy {
  const hosts = new Set<string>();
  const nets = new BlockList();
  for (const entry of allowed) {
    const net = cidr(entry);
    if (net) nets.addSubnet(net.address, net.bits, net.family);
    else hosts.add(entry.toLowerCase());
  }
  const admit: RepoHostPolicy['admit'] = async (url) => {
    const target = repoTarget(url);
    if (target === null) return { refused: null, pin: null };
    const { host, port } = target;
    if (hosts.has(host) || hosts.has(`${host}:${port}`)) return { refused: null, pin: null };
    if (isIP(host)) {
      const refused = refusal(host, [host]);
      return refused ? { refused } : { refused: null, pin: null };
    }
    let addresses: string[];
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
    } catch {
      return { refused: `repo_url: host ${host} does not resolve` };
    }
    const refused = refusal(host, addresses);
    if (refused) return { refused };
    return { refused: null, pin: `${host}:${port}:${addresses.map((a) => (isIP(a) === 6 ? `[${a}]` : a)).join(',')}` };
  };
  const refusal = (host: string, addresses: readonly string[]): string | null => {
    for (const address of addresses) {
      const family = isIP(address) === 6 ? ('ipv6' as const) : ('ipv4' as const);
      const v4 = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : null;
      const [a, f] = v4 ? [v4, 'ipv4' as const] : [address, family];
      if (reserved.check(a, f) && !nets.check(a, f)) {
        return `repo_url: ${host} is (or resolves to) ${address}, a loopback, private or reserved address; allowed only when REPO_HOSTS_ALLOWED names it`;
      }
    }
    return null;
  };
  return { admit, check: async (url) => (await admit(url)).refused };
}

/** REPO_HOSTS_ALLOWED entries: `host`, `host:port`, an IP address or a CIDR; throws naming a bad one. */
export function checkRepoHostsAllowed(entries: readonly string[]): void {
  for (const entry of entries) {
    if (entry.includes('/') ? cidr(entry) === null : !/^[A-Za-z0-9.-]+(:\d{1,5})?$/.test(entry) && !isIP(entry))
      throw new Error(`"${entry}" is not a host, host:port, IP address or CIDR`);
  }
}

function cidr(entry: string): { address: string; bits: number; family: 'ipv4' | 'ipv6' } | null {
  const [address = '', bits] = entry.split('/');
  const version = isIP(address);
  if (version === 0) return null;
  const max = version === 6 ? 128 : 32;
  const n = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN;
  return n >= 0 && n <= max ? { address, bits: n, family: version === 6 ? 'ipv6' : 'ipv4' } : null;
}

/** The network host and port a `repo_url` reaches; null for a local path or `file://`. */
export function repoTarget(url: string): { host: string; port: number } | null {
  const m = /^([a-z][a-z0-9+.-]*):\/\/(?:[^/?#@]*@)?(\[[^\]]+\]|[^/:?#]+)(?::(\d+))?/i.exec(url);
  if (m) {
    const scheme = m[1]!.toLowerCase();
    if (scheme === 'file') return null;
    return { host: m[2]!.replace(/^\[|\]$/g, '').toLowerCase(), port: Number(m[3] ?? DEFAULT_PORTS[scheme] ?? 0) };
  }
  const scp = /^[A-Za-z0-9._-]+@([A-Za-z0-9.-]+):/.exec(url);
  return scp ? { host: scp[1]!.toLowerCase(), port: 22 } : null;
}
