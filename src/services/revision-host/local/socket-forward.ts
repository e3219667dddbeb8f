import { rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';

/** A forwarder a revision reaches through a Unix socket in its sandbox (its Redis, its database). */
export interface SocketForward {
  readonly socketPath: string;
  /** Connections open now. */
  connections(): number;
  /** Closes every connection and the socket, and removes its file. */
  close(): Promise<void>;
}

/**
 * Listens on `socketPath` and hands each connection to `serve`, at most `maxConnections` at once (beyond it, node
 * closes a new connection as it is accepted: `onDrop` hears of it). What is forwarded where is the caller's.
 */
export function listenForward(
  socketPath: string,
  maxConnections: number,
  serve: (client: Socket) => void,
  onDrop?: () => void,
): Promise<SocketForward> {
  const sockets = new Set<Socket>();
  const server = createServer({ allowHalfOpen: false }, (client) => {
    sockets.add(client);
    client.once('close', () => sockets.delete(client));
    serve(client);
  });
  server.maxConnections = maxConnections;
  if (onDrop) server.on('drop', onDrop);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve({
        socketPath,
        connections: () => sockets.size,
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy();
            server.close(() => {
              rmSync(socketPath, { force: true });
              done();
            });
          }),
      });
    });
  });
}
