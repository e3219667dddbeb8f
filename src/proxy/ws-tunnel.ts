import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { clientCloseFrame, FrameCursor, FrameError, serverCloseFrame } from './ws-frames.ts';
import { ClientInspector, type HeldCommand, type InspectOptions } from './ws-inspect.ts';

/**
 * An upgraded WebSocket between a client and its upstream, piped as bytes: each read on one side is written to the
 * other at once (the peer's backpressure pauses the reader; nothing is buffered beyond one held client message, see
 * ws-inspect.ts). Both directions are followed frame by frame, so the edge can close the socket itself with a proper
 * close frame to each side, between two frames: on drain (1001), after an idle timeout (1001), for a command it
 * refuses (4000 + status, as the protocol's servers close), or for a frame it will not pass (1002, 1009).
 */
export interface TunnelOptions {
  readonly inspect: InspectOptions;
  /** No byte either way for this long closes the socket (1001). */
  readonly idleMs: number;
  /** Decides a held command: null allows it, else the close code and reason that refuse it. */
  readonly decide: (command: HeldCommand) => Promise<Refusal | null>;
  /** Called once, when both sides are closed. */
  readonly onClosed: (why: string) => void;
}

export interface Refusal {
  readonly code: number;
  readonly reason: string;
}

/** How long the edge waits for the peers to answer its close frame before it cuts both connections. */
const CLOSE_GRACE_MS = 2000;

export class Tunnel {
  private readonly inspector: ClientInspector;
  private readonly fromUpstream = new FrameCursor();
  /** The edge is closing: the close frame it sends the client once the upstream's stream is between frames. */
  private closing: Buffer | null = null;
  private closeSent = false;
  private why = '';
  /** Client bytes that arrived while a command was being decided, in order. */
  private waiting: Buffer[] | null = null;
  private done = false;
  /** A held command was refused: the upstream's view of the client's stream ends before it, between two frames. */
  private refused = false;
  private idle: NodeJS.Timeout;

  constructor(
    private readonly client: Duplex,
    private readonly upstream: Duplex,
    clientHead: Buffer,
    upstreamHead: Buffer,
    private readonly options: TunnelOptions,
  ) {
    this.inspector = new ClientInspector(options.inspect);
    this.idle = setTimeout(() => this.close(1001, 'idle timeout'), options.idleMs);
    this.idle.unref();
    client.on('data', (chunk: Buffer) => this.fromClient(chunk));
    upstream.on('data', (chunk: Buffer) => this.toClient(chunk));
    // Either side ending or failing ends the other: a WebSocket is one exchange.
    client.on('end', () => this.finish('client closed'));
    upstream.on('end', () => this.finish('upstream closed'));
    client.on('close', () => this.finish('client closed'));
    upstream.on('close', () => this.finish('upstream closed'));
    client.on('error', () => this.finish('client error'));
    upstream.on('error', () => this.finish('upstream error'));
    if (upstreamHead.length > 0) this.toClient(upstreamHead);
    if (clientHead.length > 0) this.fromClient(clientHead);
  }

  /**
   * Closes the socket from the edge: a close frame to the client as soon as the upstream's stream is between frames,
   * one to the upstream when the client's is, then both connections end (cut after a short grace).
   */
  close(code: number, reason: string): void {
    if (this.closing !== null || this.done) return;
    this.why = reason;
    this.closing = serverCloseFrame(code, reason);
    if (this.fromUpstream.atBoundary) this.sendClose();
    const cut = setTimeout(() => this.destroy(), CLOSE_GRACE_MS);
    cut.unref();
  }

  private sendClose(): void {
    if (this.closeSent) return;
    this.closeSent = true;
    const { client, upstream } = this;
    if (client.writable) client.end(this.closing!);
    if (upstream.writable) {
      // The upstream is told the client is going away, unless a client message is half sent (then the cut says it).
      if (this.refused || (this.inspector.atBoundary && this.waiting === null))
        upstream.end(clientCloseFrame(1001, 'closed by the gateway', randomBytes(4)));
      else upstream.destroy();
    }
    this.upstream.pause();
  }

  private fromClient(chunk: Buffer): void {
    if (this.done || this.closing !== null) return;
    this.idle.refresh();
    if (this.waiting !== null) {
      this.waiting.push(chunk);
      return;
    }
    let inspected;
    try {
      inspected = this.inspector.push(chunk);
    } catch (err) {
      if (err instanceof FrameError) return this.close(err.code, err.message);
      throw err;
    }
    this.write(this.upstream, this.client, inspected.forward);
    if (inspected.command === null) return;
    // Decided before anything behind it reaches the upstream: the client waits (its socket paused).
    this.waiting = inspected.rest === null ? [] : [inspected.rest];
    this.client.pause();
    void this.options.decide(inspected.command).then(
      (refusal) => this.decided(refusal),
      () => this.decided({ code: 1011, reason: 'gateway error' }),
    );
  }

  private decided(refusal: Refusal | null): void {
    if (this.done || this.closing !== null) return;
    if (refusal !== null) {
      // Dropped: a refused command never reaches the upstream, which saw none of its bytes (held from the first).
      this.waiting = null;
      this.refused = true;
      this.close(refusal.code, refusal.reason);
      return;
    }
    this.write(this.upstream, this.client, this.inspector.allow());
    const waiting = this.waiting ?? [];
    this.waiting = null;
    // Another command among these stops the stream again; what follows it then waits behind it (fromClient).
    for (const chunk of waiting) this.fromClient(chunk);
    if (this.waiting === null) this.client.resume();
  }

  private toClient(chunk: Buffer): void {
    if (this.done) return;
    this.idle.refresh();
    try {
      if (this.closing === null) {
        this.fromUpstream.skip(chunk, 0, 'end');
        this.write(this.client, this.upstream, [chunk]);
        return;
      }
      // Closing: the upstream's bytes up to the end of its current frame, then the edge's close frame.
      const end = this.fromUpstream.skip(chunk, 0, 'boundary');
      if (end > 0) this.write(this.client, this.upstream, [chunk.subarray(0, end)]);
      if (this.fromUpstream.atBoundary) this.sendClose();
    } catch (err) {
      if (!(err instanceof FrameError)) throw err;
      // The upstream sent no WebSocket frame: nothing sensible can reach the client.
      this.destroy();
    }
  }

  /** Writes `pieces` to `to`, pausing `from` until `to` drains. */
  private write(to: Duplex, from: Duplex, pieces: readonly Buffer[]): void {
    if (pieces.length === 0 || !to.writable) return;
    let ok = true;
    if (pieces.length === 1) ok = to.write(pieces[0]);
    else {
      to.cork();
      for (const p of pieces) ok = to.write(p);
      process.nextTick(() => to.uncork());
    }
    if (!ok) {
      from.pause();
      to.once('drain', () => {
        if (this.waiting === null || from !== this.client) from.resume();
      });
    }
  }

  private finish(why: string): void {
    if (this.done) return;
    // The other side is ended once what was already written to it has left.
    if (this.closing === null) this.why = why;
    this.done = true;
    clearTimeout(this.idle);
    this.client.end();
    this.upstream.end();
    const cut = setTimeout(() => this.destroy(), CLOSE_GRACE_MS);
    cut.unref();
    this.options.onClosed(this.why);
  }

  private destroy(): void {
    this.client.destroy();
    this.upstream.destroy();
    if (!this.done) this.finish(this.why || 'cut');
  }
}
