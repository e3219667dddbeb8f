import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * Where a service may connect on a tenant's word (a deployment's `repo_url`, a run's `webhook`): not at loopback,
 * private, link-local (the cloud metadata address among them) or otherwise reserved addresses, which would let a tenant
 * probe the gateway's own network. The host is resolved (every address) and every address must be public, unless the
 * host (`host`, `host:port`) or the address (IP, CIDR) is among the operator's exceptions. The addresses checked are
 * handed back so the caller connects to them and to nothing a later DNS answer names (no DNS rebinding).
 */
export type AddressVerdict =
  /**
   * `refused`: a sentence fragment naming the host (and the address), for the caller to prefix with its field;
   * `reserved`: an exception could allow it (else the host does not resolve).
   */
  | { readonly refused: string; readonly reserved: boolean }
  /** `addresses`: what was checked, to connect to; null when an exception names the host (any address goes). */
  | { readonly refused: null; readonly addresses: readonly string[] | null };

export interface AddressPolicy {
  admit(host: string, port: number): Promise<AddressVerdict>;
}

const RESERVED: [string, number, 'ipv4' | 'ipv6'][] = [
  ['0.0.0.0', 8, 'ipv4'],
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['127.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'], // link-local, 169.254.169.254 the cloud metadata service
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

/** `allowed`: the operator's exceptions (checked by `checkAllowedHosts`): `host`, `host:port`, an IP or a CIDR. */
export function addressPolicy(allowed: readonly string[]): AddressPolicy {
  const hosts = new Set<string>();
  const nets = new BlockList();
  for (const entry of allowed) {
    const net = cidr(entry);
    if (net) nets.addSubnet(net.address, net.bits, net.family);
    else hosts.add(entry.toLowerCase());
  }
  const refusal = (host: string, addresses: readonly string[]): string | null => {
    for (const address of addresses) {
      const family = isIP(address) === 6 ? ('ipv6' as const) : ('ipv4' as const);
      const v4 = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : null;
      const [a, f] = v4 ? [v4, 'ipv4' as const] : [address, family];
      if (reserved.check(a, f) && !nets.check(a, f))
        return `${host} is (or resolves to) ${address}, a loopback, private or reserved address`;
    }
    return null;
  };
  return {
    async admit(rawHost, port) {
      const host = rawHost.replace(/^\[|\]$/g, '').toLowerCase();
      if (hosts.has(host) || hosts.has(`${host}:${port}`)) return { refused: null, addresses: null };
      if (isIP(host)) {
        const refused = refusal(host, [host]);
        return refused ? { refused, reserved: true } : { refused: null, addresses: [host] };
      }
      let addresses: string[];
      try {
        addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
      } catch {
        return { refused: `host ${host} does not resolve`, reserved: false };
      }
      const refused = refusal(host, addresses);
      return refused ? { refused, reserved: true } : { refused: null, addresses };
    },
  };
}

/** The exceptions' entries: `host`, `host:port`, an IP address or a CIDR; throws naming a bad one. */
export function checkAllowedHosts(entries: readonly string[]): void {
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
