import { connect, createServer, type AddressInfo } from 'node:net';
import { targetSocketPath } from '../../src/proxy/socket-target.ts';

const proxies = new Map<string, Promise<string>>();

/**
 * An `http://` URL for a route target, for a client that speaks only TCP (the SDK, fetch): a URL as it is, and for a
 * revision's `unix:` target a loopback port of this test process piped to that socket (one per socket, kept for the
 * test file: it does not hold the process open).
 */
export function httpUrl(target: string): Promise<string> {
  const socketPath = targetSocketPath(target);
  if (socketPath === null) return Promise.resolve(target);
  let url = proxies.get(socketPath);
  if (url === undefined) {
    url = new Promise((resolve, reject) => {
      const server = createServer((client) => {
        const upstream = connect(socketPath);
        client.pipe(upstream).pipe(client);
        client.on('error', () => upstream.destroy());
        upstream.on('error', () => client.destroy());
      });
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
      server.unref();
    });
    proxies.set(socketPath, url);
  }
  return url;
}
