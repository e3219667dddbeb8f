import { connect, type Socket } from 'node:net';
import type { FuzzCase } from './fuzz-cases.ts';

/**
 * The fuzz test's raw-socket client: one case per fresh connection, read until the edge closes it, and the slow-loris
 * client that never finishes its head.
 */

/** The production listener's headersTimeout (src/listen/listen.ts). */
export const HEADERS_TIMEOUT_MS = 10_000;

export interface Outcome {
  /** Final (non-1xx) status; 0 = closed without one. */
  readonly status: number;
  /** Body of an answer of 400 or more (the edge's own errors), as received. */
  readonly body?: string;
  readonly error?: string;
  /**
   * The connection was reset (the edge closed while the request was still being sent): what was sent back may be cut
   * short.
   */
  readonly reset?: boolean;
  readonly ms: number;
}

/** Writes the case's bytes on a fresh connection and reads until the edge closes it. */
export function exchange(port: number, c: FuzzCase, timeoutMs = 8000): Promise<Outcome> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let settled = false;
    let error: string | undefined;
    let reset = false;
    const started = performance.now();
    const socket: Socket = connect(port, '127.0.0.1');
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const { status, body } = finalResponse(Buffer.concat(chunks));
      resolve({
        status,
        ms: performance.now() - started,
        ...(status >= 400 ? { body } : {}),
        ...(error ? { error } : {}),
        ...(reset ? { reset } : {}),
      });
    };
    const timer = setTimeout(() => {
      error = `no end within ${timeoutMs} ms`;
      finish();
    }, timeoutMs);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.once('end', finish);
    socket.once('close', finish);
    socket.on('error', (e: NodeJS.ErrnoException) => {
      // A reset after the edge answered and closed (it refused a request whose body was still coming) is expected.
      if (e.code === 'ECONNRESET' || e.code === 'EPIPE') reset = true;
      else error = e.code ?? e.message;
    });
    socket.once('connect', () => {
      for (const p of c.parts) socket.write(p);
      if (c.halfClose) socket.end();
    });
  });
}

/** The final (non-1xx) status and what follows its head. */
function finalResponse(data: Buffer): { status: number; body: string } {
  let text = data.toString('latin1');
  for (;;) {
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
    const end = text.indexOf('\r\n\r\n');
    if (!m) return { status: 0, body: '' };
    const status = Number(m[1]);
    if (status >= 200) return { status, body: end === -1 ? '' : text.slice(end + 4) };
    if (end === -1) return { status: 0, body: '' };
    text = text.slice(end + 4); // skip 100 Continue
  }
}

export interface Loris {
  readonly closedAfterMs: number;
  readonly response: string;
}

/** A client that sends one header line a second and never finishes its head. */
export function slowLoris(port: number): Promise<Loris> {
  return new Promise((resolve) => {
    const started = performance.now();
    let response = '';
    const socket = connect(port, '127.0.0.1', () =>
      socket.write('GET /keyed/slow-loris HTTP/1.1\r\nHost: edge.fuzz\r\n'),
    );
    let n = 0;
    const drip = setInterval(() => socket.writable && socket.write(`X-Drip-${n++}: ${'d'.repeat(10)}\r\n`), 1000);
    // Far beyond the bound below: a loris the edge never closes fails the test instead of hanging it.
    const giveUp = setTimeout(() => socket.destroy(), HEADERS_TIMEOUT_MS * 3);
    socket.on('data', (d: Buffer) => (response += d.toString('latin1')));
    socket.on('error', () => {});
    socket.once('close', () => {
      clearInterval(drip);
      clearTimeout(giveUp);
      resolve({ closedAfterMs: performance.now() - started, response });
    });
  });
}
