/**
 * WebSocket frame layout (RFC 6455 §5.2), as the edge reads it while it pipes a socket: frame headers are parsed, a
 * payload is only counted (never copied), so the edge knows where one frame ends and the next begins. That is what
 * lets it put a close frame of its own between two of the upstream's (drain, idle timeout, a refused command) and
 * hold one client message back until it is decided (ws-inspect.ts).
 */

export const OP_CONTINUATION = 0x0;
export const OP_TEXT = 0x1;
export const OP_BINARY = 0x2;
export const OP_CLOSE = 0x8;

export interface FrameHeader {
  readonly fin: boolean;
  /** The three RSV bits: an extension's (none is ever negotiated through the edge). */
  readonly rsv: number;
  readonly opcode: number;
  /** Client frames carry a mask key (RFC 6455 §5.3), else null. */
  readonly mask: Buffer | null;
  readonly length: number;
  /** The header's own bytes (2 to 14). */
  readonly bytes: Buffer;
}

/** A frame the peer sent is not a WebSocket frame the edge can pass: the close code and reason it answers. */
export class FrameError extends Error {
  constructor(
    readonly code: number,
    reason: string,
  ) {
    super(reason);
  }
}

/** Largest payload length a header may state and still be a safe JS integer (2^53 - 1). */
const MAX_SAFE_LENGTH_HIGH = 0x1fffff;

/**
 * Where the reader is in one direction's byte stream: gathering a frame header (up to 14 bytes, kept here), or inside
 * a frame's payload (only its remaining length is kept).
 */
export class FrameCursor {
  private readonly head = Buffer.alloc(14);
  private headLength = 0;
  /** Payload bytes of the current frame still to come; -1 while reading a header. */
  private left = -1;
  /** The current frame's header (set once complete). */
  header: FrameHeader | null = null;
  /** Payload bytes of the current frame read so far (the mask index of the next one). */
  payloadRead = 0;

  /** Between two frames: nothing of the next one read yet. */
  get atBoundary(): boolean {
    return this.left === -1 && this.headLength === 0;
  }

  get inPayload(): boolean {
    return this.left > 0;
  }

  /**
   * Reads header bytes from `chunk` at `at`. Returns where it stopped and, once complete, the header (a frame with an
   * empty payload ends with it). Throws FrameError for a length no frame may have.
   */
  readHeader(chunk: Buffer, at: number): { end: number; header: FrameHeader | null } {
    let i = at;
    while (i < chunk.length) {
      this.head[this.headLength++] = chunk[i++]!;
      const need = this.headerSize();
      if (need !== null && this.headLength === need) return { end: i, header: this.complete() };
    }
    return { end: i, header: null };
  }

  /** Consumes payload bytes of the current frame: returns the end of those in `chunk` from `at`. */
  readPayload(chunk: Buffer, at: number): number {
    const end = Math.min(chunk.length, at + this.left);
    this.left -= end - at;
    this.payloadRead += end - at;
    if (this.left === 0) this.left = -1;
    return end;
  }

  /**
   * Skips through `chunk` from `at` (reading headers, counting payloads) up to the first frame boundary at or after
   * `at` (`until: 'boundary'`), or through all of it. Returns where it stopped: `chunk.length` when no boundary lies
   * within.
   */
  skip(chunk: Buffer, at: number, until: 'boundary' | 'end'): number {
    let i = at;
    while (i < chunk.length) {
      if (until === 'boundary' && this.atBoundary) return i;
      if (this.left > 0) i = this.readPayload(chunk, i);
      else i = this.readHeader(chunk, i).end;
    }
    return i;
  }

  /** The header's full size once its first two bytes (and the extended length's) say it, else null. */
  private headerSize(): number | null {
    if (this.headLength < 2) return null;
    const len7 = this.head[1]! & 0x7f;
    const masked = (this.head[1]! & 0x80) !== 0;
    return 2 + (len7 === 126 ? 2 : len7 === 127 ? 8 : 0) + (masked ? 4 : 0);
  }

  private complete(): FrameHeader {
    const h = this.head;
    const len7 = h[1]! & 0x7f;
    let length = len7;
    let at = 2;
    if (len7 === 126) {
      length = h.readUInt16BE(2);
      at = 4;
    } else if (len7 === 127) {
      const high = h.readUInt32BE(2);
      if (high > MAX_SAFE_LENGTH_HIGH) throw new FrameError(1009, 'frame too large');
      length = high * 2 ** 32 + h.readUInt32BE(6);
      at = 10;
    }
    const masked = (h[1]! & 0x80) !== 0;
    const header: FrameHeader = {
      fin: (h[0]! & 0x80) !== 0,
      rsv: (h[0]! & 0x70) >> 4,
      opcode: h[0]! & 0x0f,
      mask: masked ? Buffer.from(h.subarray(at, at + 4)) : null,
      length,
      bytes: Buffer.from(h.subarray(0, this.headLength)),
    };
    this.header = header;
    this.headLength = 0;
    this.payloadRead = 0;
    this.left = length === 0 ? -1 : length;
    return header;
  }
}

/** A close frame's payload: the code (2 bytes) and a reason cut to the 123 bytes a control frame leaves. */
function closePayload(code: number, reason: string): Buffer {
  let text = Buffer.from(reason, 'utf8');
  if (text.length > 123) text = Buffer.from(reason.slice(0, 100), 'utf8').subarray(0, 123);
  const payload = Buffer.alloc(2 + text.length);
  payload.writeUInt16BE(code, 0);
  text.copy(payload, 2);
  return payload;
}

/** A close frame as a server sends it (unmasked): what the edge sends the client. */
export function serverCloseFrame(code: number, reason: string): Buffer {
  const payload = closePayload(code, reason);
  return Buffer.concat([Buffer.from([0x80 | OP_CLOSE, payload.length]), payload]);
}

/** A close frame as a client sends it (masked, RFC 6455 §5.3): what the edge sends the upstream. */
export function clientCloseFrame(code: number, reason: string, mask: Buffer): Buffer {
  const payload = closePayload(code, reason);
  for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!;
  return Buffer.concat([Buffer.from([0x80 | OP_CLOSE, 0x80 | payload.length]), mask, payload]);
}
