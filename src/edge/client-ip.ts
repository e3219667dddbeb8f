import { BlockList, isIP } from 'node:net';

/**
 * The client address a request is counted by (reduced to the value IP
 * identities count by with `ipIdentity`, identity.ts).
 *
 * It is the socket's peer address. Only when that peer is a trusted proxy
 * (TRUST_PROXY, a CIDR list) is `X-Forwarded-For` read, right to left,
 * skipping trusted hops: the first untrusted address is the client. A client
 * can prepend anything to the header, so nothing left of that is believed.
 */
export interface TrustedProxies {
  isTrusted(ip: string): boolean;
}

export const TRUST_NONE: TrustedProxies = { isTrusted: () => false };

/** `10.0.0.0/8, 192.168.1.7, ::1/128` → a matcher; throws on an entry that is not an address or CIDR. */
export function trustedProxies(cidrs: readonly string[]): TrustedProxies {
  if (cidrs.length === 0) return TRUST_NONE;
  const list = new BlockList();
  for (const entry of cidrs) {
    const [address, bits] = entry.split('/');
    const family = isIP(address ?? '');
    const max = family === 6 ? 128 : 32;
    const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN;
    if (family === 0 || !(prefix >= 0 && prefix <= max)) throw new Error(`"${entry}" is not an IP address or CIDR`);
    list.addSubnet(address!, prefix, family === 6 ? 'ipv6' : 'ipv4');
  }
  return {
    isTrusted(ip) {
      const family = isIP(ip);
      return family !== 0 && list.check(ip, family === 6 ? 'ipv6' : 'ipv4');
    },
  };
}

/** `::ffff:1.2.3.4` → `1.2.3.4`; other addresses unchanged. */
export function unmapIPv4(ip: string): string {
  return ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;
}

export function clientIp(peer: string, forwardedFor: string | string[] | undefined, trust: TrustedProxies): string {
  const socketIp = unmapIPv4(peer);
  if (forwardedFor === undefined || !trust.isTrusted(socketIp)) return socketIp;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
  let client = socketIp;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = unmapIPv4(stripPort(hops[i]!.trim()));
    if (isIP(hop) === 0) break; // garbage: believe nothing further left
    client = hop;
    if (!trust.isTrusted(hop)) break;
  }
  return client;
}

/** `1.2.3.4:567` → `1.2.3.4`, `[::1]:80` → `::1`. */
function stripPort(hop: string): string {
  if (hop.startsWith('[')) return hop.slice(1, hop.indexOf(']'));
  const colon = hop.indexOf(':');
  return colon !== -1 && colon === hop.lastIndexOf(':') ? hop.slice(0, colon) : hop;
}
