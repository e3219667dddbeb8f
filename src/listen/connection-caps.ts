import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Bounds on the edge's open connections beyond MAX_CONNECTIONS (which Node enforces at accept for the whole process):
 *
 * - At most `maxPerAddress` open per client address (`addressOf`: the peer as IP limits count it, IPv6 by its prefix;
 *   null for a peer that is exempt, a trusted proxy carrying many clients). One more is answered 429
 *   `too_many_connections` and closed before anything of it is read. Without it one client held every slot of
 *   MAX_CONNECTIONS with idle keep-alive sockets (one cheap request each) and new clients timed out.
 * - Near MAX_CONNECTIONS (`pressure` of it), idle keep-alive sockets are closed at once and a connection that goes
 *   idle is kept `pressureKeepAliveMs` instead of `keepAliveMs`: the slots go to clients with something to ask. Many
 *   addresses holding a few idle sockets each meet this instead of the per-address cap.
 *
 * Counted per listener, so per process: with WORKERS > 1 each edge worker counts its own connections.
 */
export interface ConnectionCapsOptions {
  readonly maxPerAddress: number;
  readonly maxConnections: number;
  readonly addressOf: (socket: Socket) => string | null;
  readonly keepAliveMs: number;
  /** Share of maxConnections open from which keep-alive is cut short (default 0.8). */
  readonly pressure?: number;
  readonly pressureKeepAliveMs?: number;
  /** The answer written to a connection over its address's cap. */
  readonly refusal: string;
}

/** How often, at most, idle connections are swept while under pressure. */
const SWEEP_MS = 1000;
/** How long a refused connection may stay open for its answer to leave. */
const REFUSED_LINGER_MS = 2000;

export function capConnections(server: Server, o: ConnectionCapsOptions): { readonly open: number } {
  const byAddress = new Map<string, number>();
  const threshold = Math.max(1, Math.floor(o.maxConnections * (o.pressure ?? 0.8)));
  const shortMs = o.pressureKeepAliveMs ?? 1000;
  let open = 0;
  let lastSweep = 0;

  const underPressure = () => {
    const pressed = open >= threshold;
    // Read by Node when a connection goes idle after a response: sockets idle from now on are kept this long.
    server.keepAliveTimeout = pressed ? shortMs : o.keepAliveMs;
    const now = Date.now();
    if (pressed && now - lastSweep >= SWEEP_MS) {
      lastSweep = now;
      server.closeIdleConnections();
    }
  };

  server.on('connection', (socket: Socket) => {
    const address = o.addressOf(socket);
    if (address !== null) {
      const n = byAddress.get(address) ?? 0;
      if (n >= o.maxPerAddress) {
        socket.on('error', () => socket.destroy());
        socket.end(o.refusal);
        setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref();
        return;
      }
      byAddress.set(address, n + 1);
    }
    open++;
    underPressure();
    socket.once('close', () => {
      open--;
      if (address !== null) {
        const left = (byAddress.get(address) ?? 1) - 1;
        if (left <= 0) byAddress.delete(address);
        else byAddress.set(address, left);
      }
      underPressure();
    });
  });
  return {
    get open() {
      return open;
    },
  };
}
