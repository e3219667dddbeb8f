/**
 * Where the browser reaches this server, for the URLs of `POST /ui/{agent}`'s answer: the host the client asked for
 * (`x-forwarded-host` when a proxy says so, as the edge does since it sends its upstream's own Host; else `Host`), the
 * scheme when a proxy reports `x-forwarded-proto: https`, and the path a proxy stripped (`x-forwarded-prefix`: a
 * deployment's `/deployments/{id}` at the edge). Otherwise, as on the official server, a local host gets `http:` and
 * any other a protocol-relative URL. Each value is checked against its grammar: a value that is not a host, a
 * scheme or a path is refused (the header's name comes back), never written into the page.
 */
export type RequestOrigin = { readonly origin: string } | { readonly badHeader: string };

/** A DNS name or IPv4 address, or a bracketed IPv6 address, with an optional port. */
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$/;
const PREFIX = /^(?:\/[A-Za-z0-9._~-]+)*$/;

export function requestOrigin(header: (name: string) => string | undefined): RequestOrigin {
  const forwardedHost = header('x-forwarded-host');
  const hostHeader = forwardedHost === undefined ? 'host' : 'x-forwarded-host';
  const host = (forwardedHost ?? header('host'))?.trim();
  if (host === undefined || host.length > 260 || !HOST.test(host)) return { badHeader: hostHeader };
  const proto = header('x-forwarded-proto')?.trim().toLowerCase();
  if (proto !== undefined && proto !== 'http' && proto !== 'https') return { badHeader: 'x-forwarded-proto' };
  const prefix = header('x-forwarded-prefix')?.trim().replace(/\/+$/, '') ?? '';
  if (prefix.length > 512 || !PREFIX.test(prefix)) return { badHeader: 'x-forwarded-prefix' };
  // `http` from a proxy may be a TLS-terminating balancer's hop it did not trust: the page's own scheme (a
  // protocol-relative URL) is the safer guess then, as on the official server.
  const scheme = proto === 'https' ? 'https:' : isLocal(host) ? 'http:' : '';
  return { origin: `${scheme}//${host}${prefix}` };
}

function isLocal(host: string): boolean {
  const name = host.replace(/:[0-9]+$/, '');
  return name === 'localhost' || name === '127.0.0.1';
}
