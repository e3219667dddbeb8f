/**
 * The little of RESP2 the Redis forwarder (redis-forward.ts) reads, as two
 * incremental parsers fed chunk by chunk, buffering nothing but header lines
 * (at most MAX_LINE bytes) and a frame's first two short arguments: bulk
 * bodies are skipped by their length.
 *
 * RequestFrames: a client's commands, each an array of bulk strings (what
 * every client library sends; inline commands are refused). As soon as a
 * frame's command and first argument are known (for FCALL, the function),
 * `head` decides whether it goes on; its bytes then stream through `data`
 * (the forwarder never holds a whole request), or are dropped. An error ends
 * the stream: a malformed frame, or one past `maxBytes`.
 * ReplyCounter: where each of Redis's top-level replies ends in the stream,
 * so that the forwarder can put replies of its own in order between them.
 */
const MAX_LINE = 32;
/** Arguments captured (the command's name and its first argument), and their longest captured length. */
const CAPTURED_ARGS = 2;
const MAX_CAPTURED = 128;
const CR = 13;
const LF = 10;

export interface FrameSink {
  /** A frame's command (lower case; '' when long) and first argument ('' when absent or long): true = forward it. */
  head(command: string, arg1: string): boolean;
  /** Bytes of a forwarded frame, in order. */
  data(bytes: Buffer): void;
}

export class RequestFrames {
  private bytes = 0;
  private line = '';
  /** 'array': reading `*<n>`; 'bulk': reading `$<len>`; 'body': skipping `body` bytes (data + CRLF). */
  private state: 'array' | 'bulk' | 'body' = 'array';
  private args = 0;
  private index = 0;
  private body = 0;
  private captured: string[] = [];
  private capturing: Buffer[] | null = null;
  /** Bytes of the frame before `head` decided (a few headers and two short arguments). */
  private held: Buffer[] = [];
  /** null: not decided yet; true: its bytes go to `data`; false: dropped. */
  private decided: boolean | null = null;

  constructor(private readonly maxBytes: number) {}

  /** Whether a frame is being forwarded, part of it sent already. */
  get forwarding(): boolean {
    return this.decided === true;
  }

  /** Feeds a chunk. Returns an error message when the stream is refused (nothing more of it may be forwarded). */
  feed(chunk: Buffer, sink: FrameSink): string | null {
    let at = 0;
    let from = 0;
    const pass = (to: number) => {
      if (to <= from) return;
      const part = chunk.subarray(from, to);
      if (this.decided === null) this.held.push(part);
      else if (this.decided) sink.data(part);
      from = to;
    };
    while (at < chunk.length) {
      const was = at;
      if (this.state === 'body') {
        const n = Math.min(this.body, chunk.length - at);
        if (this.capturing) this.capturing.push(chunk.subarray(at, at + n));
        at += n;
        this.body -= n;
        if (this.body === 0) this.endArg();
      } else {
        const end = chunk.indexOf(LF, at);
        const stop = end === -1 ? chunk.length : end;
        if (this.line.length + (stop - at) > MAX_LINE) return 'Protocol error: header line too long';
        this.line += chunk.toString('latin1', at, stop);
        at = end === -1 ? stop : end + 1;
        if (end !== -1) {
          const line = this.line.endsWith('\r') ? this.line.slice(0, -1) : null;
          this.line = '';
          if (line === null) return 'Protocol error: expected CRLF';
          const error = this.header(line);
          if (error) return error;
        }
      }
      this.bytes += at - was;
      if (this.bytes > this.maxBytes)
        return `request over ${Math.round(this.maxBytes / 1024)} KiB refused by the gateway`;
      if (this.decided === null && this.args > 0 && this.captured.length >= Math.min(CAPTURED_ARGS, this.args)) {
        pass(at);
        this.decided = sink.head(this.captured[0]!.toLowerCase(), this.captured[1] ?? '');
        if (this.decided) for (const part of this.held) sink.data(part);
        this.held = [];
      }
      if (this.state === 'array' && this.args > 0 && this.index === this.args) {
        pass(at);
        this.bytes = 0;
        this.args = 0;
        this.index = 0;
        this.captured = [];
        this.decided = null;
      }
    }
    pass(chunk.length);
    return null;
  }

  private header(line: string): string | null {
    const kind = line[0];
    const n = /^-?\d{1,12}$/.test(line.slice(1)) ? Number(line.slice(1)) : NaN;
    if (this.state === 'array') {
      if (kind !== '*') return 'Protocol error: the gateway takes RESP arrays of bulk strings only';
      if (!(n >= 1)) return 'Protocol error: invalid multibulk length';
      this.args = n;
      this.index = 0;
      this.state = 'bulk';
      return null;
    }
    if (kind !== '$' || !(n >= 0)) return 'Protocol error: expected a bulk string';
    this.body = n + 2;
    this.capturing = null;
    if (this.index < CAPTURED_ARGS) {
      // A long one is not kept: known as '' at once, so the decision never waits for its body.
      if (n <= MAX_CAPTURED) this.capturing = [];
      else this.captured.push('');
    }
    this.state = 'body';
    return null;
  }

  private endArg(): void {
    if (this.capturing) this.captured.push(Buffer.concat(this.capturing).toString('latin1').slice(0, -2));
    this.capturing = null;
    this.index++;
    this.state = this.index === this.args ? 'array' : 'bulk';
  }
}

/** Where Redis's top-level RESP2 replies end. */
export class ReplyCounter {
  private line = '';
  private lineLength = 0;
  private body = 0;
  /** Elements still due of each array being read, innermost last. */
  private readonly open: number[] = [];
  /** The type byte of the top-level reply being read ('' between replies). */
  private first = '';

  /** Calls `reply(end, type)` for each reply that ends in `chunk` (end: the offset after it). An error when malformed. */
  feed(chunk: Buffer, reply: (end: number, type: string) => void): string | null {
    let at = 0;
    while (at < chunk.length) {
      if (this.body > 0) {
        const n = Math.min(this.body, chunk.length - at);
        at += n;
        this.body -= n;
        if (this.body === 0 && this.done()) reply(at, this.take());
        continue;
      }
      // A line: only the first MAX_LINE bytes are kept (an error's or a status's text is not needed).
      const end = chunk.indexOf(LF, at);
      const stop = end === -1 ? chunk.length : end + 1;
      if (this.lineLength < MAX_LINE)
        this.line += chunk.toString('latin1', at, Math.min(stop, at + MAX_LINE - this.lineLength));
      this.lineLength += stop - at;
      at = stop;
      if (end === -1) continue;
      const line = this.line;
      this.line = '';
      this.lineLength = 0;
      if (this.first === '') this.first = line[0] ?? '';
      const error = this.value(line);
      if (error) return error;
      if (this.body === 0 && this.done()) reply(at, this.take());
    }
    return null;
  }

  /** Reads one header line; true/false is left to done(): a value whose body follows sets `body`. */
  private pendingArray = false;
  private value(line: string): string | null {
    const kind = line[0];
    if (kind === '+' || kind === '-' || kind === ':') return null;
    const n = Number.parseInt(line.slice(1), 10);
    if (Number.isNaN(n) || line.charCodeAt(line.length - 2) !== CR) return 'unexpected reply from Redis';
    if (kind === '$') {
      if (n >= 0) this.body = n + 2;
      return null;
    }
    if (kind === '*') {
      if (n > 0) {
        this.open.push(n);
        this.pendingArray = true;
      }
      return null;
    }
    return 'unexpected reply from Redis';
  }

  /** One value complete (unless it opened an array): counts it against its arrays; true when a top-level reply ended. */
  private done(): boolean {
    if (this.pendingArray) {
      this.pendingArray = false;
      return false;
    }
    while (this.open.length > 0) {
      const left = this.open[this.open.length - 1]! - 1;
      if (left > 0) {
        this.open[this.open.length - 1] = left;
        return false;
      }
      this.open.pop();
    }
    return true;
  }

  private take(): string {
    const first = this.first;
    this.first = '';
    return first;
  }
}
