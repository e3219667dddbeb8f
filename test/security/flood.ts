import { connect, type Socket } from 'node:net';

/**
 * A bounded request flood over raw keep-alive sockets, pipelined: `connections` sockets, each with up to `depth`
 * requests in flight, until `total` have been answered, `deadline` passes or `stop()` says so. A response the server
 * ends with `connection: close` (an edge 400) costs a reconnect; requests written but unanswered on a closed socket
 * are dropped (the next ones carry new numbers). Responses are read just enough to count them (content-length or chunked).
 */
export interface FloodOptions {
  readonly port: number;
  readonly total: number;
  readonly connections: number;
  readonly depth: number;
  /** The raw bytes of request `n` (0-based, unique per request). */
  readonly request: (n: number) => string;
  /** Epoch ms after which the flood ends whatever has been answered. */
  readonly deadline: number;
  /** Checked after every response: true ends the flood. */
  readonly stop?: () => boolean;
}

export interface FloodResult {
  readonly answered: number;
  /** Responses per status code. */
  readonly statuses: Readonly<Record<number, number>>;
  readonly ms: number;
}

export function flood(options: FloodOptions): Promise<FloodResult> {
  const started = Date.now();
  const statuses: Record<number, number> = {};
  let next = 0;
  let answered = 0;
  let open = 0;
  const over = () => answered >= options.total || Date.now() > options.deadline || (options.stop?.() ?? false);

  const sockets = new Set<Socket>();
  return new Promise((resolve) => {
    const done = () => (clearTimeout(cut), resolve({ answered, statuses, ms: Date.now() - started }));
    const finish = () => {
      if (open === 0) done();
    };
    // Past the deadline, requests still unanswered are abandoned: the flood never outlives it by more than a second.
    const cut = setTimeout(() => (sockets.forEach((s) => s.destroy()), done()), options.deadline - Date.now() + 1000);
    const start = () => {
      open++;
      const socket: Socket = connect(options.port, '127.0.0.1');
      sockets.add(socket);
      let inFlight = 0;
      let buffered: Buffer = Buffer.alloc(0);
      const fill = () => {
        while (!over() && inFlight < options.depth && next < options.total + options.connections * options.depth) {
          inFlight++;
          socket.write(options.request(next++), 'latin1');
        }
        if (inFlight === 0) socket.end();
      };
      socket.on('connect', fill);
      socket.on('data', (chunk: Buffer) => {
        buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
        let closing = false;
        for (;;) {
          const end = responseEnd(buffered);
          if (end === -1) break;
          const head = buffered.subarray(0, buffered.indexOf('\r\n\r\n')).toString('latin1');
          const status = Number(head.slice(9, 12));
          statuses[status] = (statuses[status] ?? 0) + 1;
          answered++;
          inFlight--;
          buffered = buffered.subarray(end);
          if (/\r\nconnection: *close/i.test(head)) closing = true;
        }
        if (closing) socket.destroy();
        else fill();
      });
      socket.on('error', () => socket.destroy());
      socket.on('close', () => {
        sockets.delete(socket);
        open--;
        if (!over()) start();
        else finish();
      });
    };
    for (let i = 0; i < options.connections; i++) start();
  });
}

/** Offset just past the first complete response in `data`, or -1. */
function responseEnd(data: Buffer): number {
  const headEnd = data.indexOf('\r\n\r\n');
  if (headEnd === -1) return -1;
  const head = data.subarray(0, headEnd).toString('latin1');
  const length = /\r\ncontent-length: *(\d+)/i.exec(head);
  if (length) {
    const end = headEnd + 4 + Number(length[1]);
    return data.length >= end ? end : -1;
  }
  if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
    const last = data.indexOf('\r\n0\r\n\r\n', headEnd);
    return last === -1 ? -1 : last + 7;
  }
  return headEnd + 4;
}
