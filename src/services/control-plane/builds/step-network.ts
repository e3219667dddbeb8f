import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { NetworkPlan } from '../../revision-host/local/sandbox/network.ts';

/**
 * The network of a git step, which needs one address at most: none at all for a local repository; the namespace with
 * the repository's addresses allowed when they are private (the operator admitted them: REPO_HOSTS_ALLOWED); the
 * host's network only when the admitted address is loopback or IPv6, which a namespace of its own cannot reach (the
 * namespace is IPv4 only). npm steps get the base plan: the registry is a public address, a private mirror is the
 * operator's SANDBOX_NETWORK_ALLOW.
 */
export async function gitNetwork(
  base: NetworkPlan,
  url: string,
  local: boolean,
  pin: string | null,
): Promise<NetworkPlan> {
  if (base.mode === 'host') return base;
  if (local) return { mode: 'none', allow: [] };
  const addresses = pin ? pinned(pin) : await resolved(url);
  if (addresses.some((a) => isIP(a) !== 4 || a.startsWith('127.'))) return { mode: 'host', allow: [] };
  return { mode: base.mode, allow: [...base.allow, ...addresses.map((a) => `${a}/32`)] };
}

/** The addresses of curl's `host:port:address[,address]` (IPv6 ones bracketed). */
function pinned(pin: string): string[] {
  const [, , ...rest] = pin.split(':');
  return rest
    .join(':')
    .split(',')
    .map((a) => a.replace(/^\[(.*)\]$/, '$1'));
}

/** The addresses of the URL's host (an IP literal, or a host the operator allowed, which the host check did not pin). */
async function resolved(url: string): Promise<string[]> {
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
  } catch {
    return []; // scp-like or invalid: git fails on it anyway, in the namespace
  }
  if (isIP(host)) return [host];
  try {
    return (await lookup(host, { all: true })).map((a) => a.address);
  } catch {
    return [];
  }
}
