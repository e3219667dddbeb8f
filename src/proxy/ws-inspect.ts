import { FrameCursor, FrameError, OP_BINARY, OP_CONTINUATION, OP_TEXT, type FrameHeader } from './ws-frames.ts';

/**
 * The client's side of a proxied WebSocket, read frame by frame on its way to the upstream: the bytes pass unchanged,
 * but each data message (text or binary: a server may parse either as JSON) is held from its first byte until the
 * edge knows whether it is a command that starts work. Such a command is handed to the caller (the edge limits it) and
 * the stream waits for its decision: allowed, the held bytes go on; refused, they never reach the upstream. Any other
 * message goes on as soon as it is known not to be one (at its end, usually in the same read).
 *
 * Bounded: a message is inspected up to `inspectBytes` (its first bytes, unmasked, the only copy made); one that is
 * still undecided by then (a command can only be read whole) is taken for a command that starts work, so a socket
 * cannot hide one behind a long message. A frame or message longer than `maxMessageBytes` closes the socket (1009).
 */
export interface InspectOptions {
  /** Methods that start work: counted like the HTTP request that starts a run. Empty: nothing is held. */
  readonly workMethods: ReadonlySet<string>;
  readonly inspectBytes: number;
  readonly maxMessageBytes: number;
}

/** A command that starts work, waiting for the caller's decision. `id` and `method` are null when unreadable. */
export interface HeldCommand {
  readonly id: unknown;
  readonly method: string | null;
}

export interface Inspected {
  /** Bytes to send the upstream now, in order. */
  readonly forward: Buffer[];
  /** Set when the stream stopped at a command to decide: call `allow()` or drop the socket. */
  readonly command: HeldCommand | null;
  /** What the chunk holds after the command's last read byte: push it once the command is allowed. */
  readonly rest: Buffer | null;
}

interface Message {
  readonly held: Buffer[];
  heldBytes: number;
  readonly inspect: Buffer;
  inspected: number;
  /** Payload bytes of the message so far (all its frames). */
  total: number;
  /** Undecided: its bytes are held. */
  holding: boolean;
}

export class ClientInspector {
  private readonly cursor = new FrameCursor();
  private message: Message | null = null;
  /** A data message has started and not ended (a continuation frame is expected). */
  private open = false;
  private messageBytes = 0;
  private pendingHeld: Buffer[] | null = null;

  constructor(private readonly options: InspectOptions) {}

  /** Between two frames and holding nothing: a close frame of the edge's own may go to the upstream now. */
  get atBoundary(): boolean {
    return this.cursor.atBoundary && this.message === null && this.pendingHeld === null;
  }

  /** The held command is allowed: its bytes, to send before anything pushed next. */
  allow(): Buffer[] {
    const held = this.pendingHeld ?? [];
    this.pendingHeld = null;
    return held;
  }

  /** Reads one chunk from the client. Throws FrameError for a frame the edge will not pass. */
  push(chunk: Buffer): Inspected {
    const forward: Buffer[] = [];
    const emit = (piece: Buffer) => {
      if (piece.length === 0) return;
      const m = this.message;
      if (m?.holding) {
        m.held.push(piece);
        m.heldBytes += piece.length;
      } else forward.push(piece);
    };
    const stop = (command: HeldCommand, at: number): Inspected => ({
      forward,
      command,
      rest: at < chunk.length ? chunk.subarray(at) : null,
    });
    let at = 0;
    while (at < chunk.length) {
      const cursor = this.cursor;
      let header: FrameHeader;
      if (!cursor.inPayload) {
        const read = cursor.readHeader(chunk, at);
        at = read.end;
        if (read.header === null) break;
        header = read.header;
        this.onHeader(header);
        emit(header.bytes);
      } else {
        header = cursor.header!;
        const start = at;
        const offset = cursor.payloadRead;
        at = cursor.readPayload(chunk, at);
        const m = this.message;
        if (m?.holding && header.opcode < 0x8) this.inspectPayload(m, header, chunk, start, at, offset);
        emit(chunk.subarray(start, at));
      }
      if (!cursor.inPayload && this.frameEnded(header)) {
        const command = this.decide(forward);
        if (command) return stop(command, at);
        continue;
      }
      const m = this.message;
      if (m?.holding && (m.inspected >= this.options.inspectBytes || m.heldBytes >= 2 * this.options.inspectBytes)) {
        // Too long to read whole (or split into ever more empty frames): taken for a command that starts work.
        return stop(this.hold(m, { id: null, method: null }), at);
      }
    }
    return { forward, command: null, rest: null };
  }

  private onHeader(h: FrameHeader): void {
    if (h.mask === null) throw new FrameError(1002, 'client frames must be masked');
    if (h.rsv !== 0) throw new FrameError(1002, 'no extension was negotiated');
    if (h.opcode >= 0x8) {
      if (h.opcode > 0xa) throw new FrameError(1002, `unknown opcode ${h.opcode}`);
      if (!h.fin || h.length > 125) throw new FrameError(1002, 'control frames are short and unfragmented');
      return;
    }
    if (h.opcode === OP_CONTINUATION) {
      if (!this.open) throw new FrameError(1002, 'continuation without a message');
    } else if (h.opcode === OP_TEXT || h.opcode === OP_BINARY) {
      if (this.open) throw new FrameError(1002, 'new message before the last one ended');
      this.open = true;
      this.messageBytes = 0;
      if (this.options.workMethods.size > 0)
        this.message = {
          held: [],
          heldBytes: 0,
          inspect: Buffer.allocUnsafe(Math.min(this.options.inspectBytes, h.length)),
          inspected: 0,
          total: 0,
          holding: true,
        };
    } else throw new FrameError(1002, `unknown opcode ${h.opcode}`);
    this.messageBytes += h.length;
    if (this.messageBytes > this.options.maxMessageBytes) throw new FrameError(1009, 'message too large');
  }

  /** Unmasks the payload bytes [start, end) of the current frame into the message's inspected prefix. */
  private inspectPayload(m: Message, h: FrameHeader, chunk: Buffer, start: number, end: number, offset: number): void {
    const mask = h.mask!;
    const room = this.options.inspectBytes - m.inspected;
    const n = Math.min(room, end - start);
    let buf = m.inspect;
    if (m.inspected + n > buf.length) {
      // A fragmented message: the first frame's length sized the buffer.
      const grown = Buffer.allocUnsafe(Math.min(this.options.inspectBytes, Math.max(buf.length * 2, m.inspected + n)));
      buf.copy(grown, 0, 0, m.inspected);
      (m as { inspect: Buffer }).inspect = buf = grown;
    }
    for (let i = 0; i < n; i++) buf[m.inspected + i] = chunk[start + i]! ^ mask[(offset + i) & 3]!;
    m.inspected += n;
    m.total += end - start;
  }

  /** A frame ended: true when it ended a data message (then it is decided). */
  private frameEnded(h: FrameHeader): boolean {
    if (h.opcode >= 0x8 || !h.fin) return false;
    this.open = false;
    return this.message !== null;
  }

  /** The message ended: a command that starts work stops the stream; anything else goes on. */
  private decide(forward: Buffer[]): HeldCommand | null {
    const m = this.message!;
    if (!m.holding) {
      this.message = null;
      return null;
    }
    const complete = m.total === m.inspected;
    const command = complete ? readCommand(m.inspect.subarray(0, m.inspected)) : { id: null, method: null };
    if (command === null || (command.method !== null && !this.options.workMethods.has(command.method))) {
      forward.push(...m.held);
      this.message = null;
      return null;
    }
    return this.hold(m, command);
  }

  /** Stops at a command: its bytes wait in `pendingHeld`; the rest of its message (if any) passes once allowed. */
  private hold(m: Message, command: HeldCommand): HeldCommand {
    this.pendingHeld = m.held.splice(0);
    m.holding = false;
    if (!this.open) this.message = null;
    return command;
  }
}

/** The command a message holds, or null when it is none (not JSON, not an object with a string method). */
function readCommand(payload: Buffer): HeldCommand | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload.toString('utf8'));
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return null;
  const { id, method } = parsed as { id?: unknown; method?: unknown };
  return typeof method === 'string' ? { id, method } : null;
}
