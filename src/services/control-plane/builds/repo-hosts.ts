import { isIP } from 'node:net';
import { addressPolicy } from '../../shared/outbound-address.ts';

/**
 * Where a `repo_url` may point (NODE_ENV=production): not at loopback, private, link-local or otherwise reserved
 * addresses, which would let a deployment probe the gateway's own network (a clone's error tells an open port from a
 * closed one). The host is resolved (every address) when a deployment is created or patched and again right before
 * the clone; every address must be public, or the host (`host`, `host:port`) or an address (IP, CIDR) be named in
 * REPO_HOSTS_ALLOWED. The address check itself is shared with the Agent Server's webhooks
 * (services/shared/outbound-address.ts). Local paths and `file://` are LOCAL_REPOS's to decide.
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

const DEFAULT_PORTS: Record<string, number> = { http: 80, https: 443, ssh: 22, git: 9418 };

/** `allowed`: REPO_HOSTS_ALLOWED entries, checked by the settings (`checkAllowedHosts`). The address check is shared. */
export function repoHostPolicy(allowed: readonly string[]): RepoHostPolicy {
  const addresses = addressPolicy(allowed);
  const admit: RepoHostPolicy['admit'] = async (url) => {
    const target = repoTarget(url);
    if (target === null) return { refused: null, pin: null };
    const { host, port } = target;
    const verdict = await addresses.admit(host, port);
    if (verdict.refused !== null) {
      const allowedWhen = verdict.reserved ? '; allowed only when REPO_HOSTS_ALLOWED names it' : '';
      return { refused: `repo_url: ${verdict.refused}${allowedWhen}` };
    }
    // An IP address or a host REPO_HOSTS_ALLOWED names: nothing to pin.
    if (verdict.addresses === null || isIP(host)) return { refused: null, pin: null };
    const pinned = verdict.addresses.map((a) => (isIP(a) === 6 ? `[${a}]` : a)).join(',');
    return { refused: null, pin: `${host}:${port}:${pinned}` };
  };
  return { admit, check: async (url) => (await admit(url)).refused };
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
