import type { Metrics } from '../metrics/metrics.ts';
import type { Tunnel } from '../proxy/ws-tunnel.ts';

/**
 * The WebSockets open through this edge process: counted per client address (handshakes under way included), so one
 * address cannot hold more than WEBSOCKET_MAX_PER_IP of them, as MAX_CONNECTIONS and the header timeout bound slow
 * clients; the gauge `gateway_websockets_open`; and the list a drain closes (1001).
 */
export class OpenWebSockets {
  private readonly byIp = new Map<string, number>();
  private readonly open = new Set<Tunnel>();

  constructor(
    readonly maxPerIp: number,
    private readonly metrics?: Metrics,
  ) {}

  /** Takes a place for `ip` (the address as IP limits count it): false when it holds `maxPerIp` already. */
  reserve(ip: string): boolean {
    const n = this.byIp.get(ip) ?? 0;
    if (n >= this.maxPerIp) return false;
    this.byIp.set(ip, n + 1);
    return true;
  }

  release(ip: string): void {
    const n = (this.byIp.get(ip) ?? 1) - 1;
    if (n <= 0) this.byIp.delete(ip);
    else this.byIp.set(ip, n);
  }

  /** A reserved place became an open socket: it is released when the socket closes (`closed`). */
  opened(tunnel: Tunnel): void {
    this.open.add(tunnel);
    this.metrics?.webSockets.inc();
  }

  closed(tunnel: Tunnel, ip: string): void {
    if (!this.open.delete(tunnel)) return;
    this.release(ip);
    this.metrics?.webSockets.dec();
  }

  get size(): number {
    return this.open.size;
  }

  /** Drain: every socket gets a close frame (1001, going away), so its client reconnects to a gateway that stays. */
  closeAll(reason: string): void {
    for (const tunnel of this.open) tunnel.close(1001, reason);
  }
}
