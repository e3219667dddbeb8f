import { request } from 'node:http';
import { createServer } from 'node:net';
import { renameSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Where a revision's Agent Server is reached: a Unix socket the host makes in the revision's run folder (the host's,
 * never mounted into the sandbox) and hands to the process as its fd LISTEN_FD. No port is involved, so no other
 * process (another tenant's, or one squatting a port a dead revision left) can take its place: the edge reaches the
 * process the host started, or nothing (`unix:` targets, proxy/forward.ts).
 */
export const LISTEN_FD = 4;

export interface AgentSocket {
  /** The listening socket's descriptor, to put in the child's stdio at LISTEN_FD (spawn duplicates it). */
  readonly fd: number;
  readonly path: string;
  /** Once spawned: the gateway's copy is closed (the child's stays listening), the path kept. */
  handedOver(): void;
}

export async function agentSocket(runDir: string): Promise<AgentSocket> {
  const path = join(runDir, 'agent.sock');
  // Bound under another name, then renamed: closing the gateway's copy unlinks the name it was bound to, not this one.
  const bound = `${path}.bound`;
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(bound, () => resolve());
  });
  renameSync(bound, path);
  // Node hands a child a socket only as a descriptor number (a net.Server is not a stdio stream): its handle's.
  const fd = (server as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  if (typeof fd !== 'number' || fd < 0) {
    server.close();
    throw new Error('this Node gives no descriptor of a listening socket');
  }
  return { fd, path, handedOver: () => server.close() };
}

/** Its Agent Server answers `/ok` now. */
export function socketHealth(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ socketPath: path, path: '/ok', timeout: 2000, headers: { host: 'revision' } }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}
