import { networkInterfaces } from 'node:os';
import type { TrustedProxies } from '../edge/client-ip.ts';
import { SettingsError } from './env.ts';

/**
 * A gateway that runs deployments itself (the bundled control plane: each revision a process on this host, in this
 * host's network) cannot believe X-Forwarded-For from any address of this host: a deployment's process connects to
 * the edge from loopback, or from any address the host holds, and would name whatever client address it likes,
 * spending other clients' buckets or escaping its own. So TRUST_PROXY may not cover loopback or an address of this
 * host here; a proxy in front of such a gateway runs on another host (or the control plane runs elsewhere, with
 * CONTROL_PLANE_URL). Once revisions live in network namespaces of their own and reach the gateway only through
 * sockets it owns, a proxy on this host's own addresses can be trusted again.
 */
const LOOPBACK_SAMPLES = ['127.0.0.1', '127.0.0.2', '127.1.0.1', '127.255.255.254', '::1'];

export function refuseHostProxies(trust: TrustedProxies, hostAddresses: readonly string[] = ownAddresses()): void {
  const own = [...LOOPBACK_SAMPLES, ...hostAddresses].find((a) => trust.isTrusted(a));
  if (own === undefined) return;
  throw new SettingsError(
    'TRUST_PROXY',
    `it covers ${own}, an address of this host, which the deployments this gateway runs connect from: their ` +
      'X-Forwarded-For would be believed. Trust only proxies on other hosts, or run the control plane elsewhere ' +
      '(CONTROL_PLANE_URL)',
  );
}

function ownAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address.split('%')[0]!));
}
