import { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { readLines } from './line-reader.ts';

/**
 * The control channel between the host and a revision's process: JSON lines
 * over the socket at the child's fd 3 (a socketpair from `spawn`'s stdio).
 * Lines are bounded (`MAX_MESSAGE`); a line that does not parse reaches the
 * handler as `undefined`, so each side decides what garbage means.
 */
export const CHANNEL_FD = 3;
const MAX_MESSAGE = 64 * 1024;

export function onMessages(stream: Readable, handle: (m: unknown) => void): void {
  readLines(stream, MAX_MESSAGE, (line, truncated) => {
    if (truncated) return handle(undefined);
    if (line === '') return; // the separator before each message (writeMessage)
    let m: unknown;
    try {
      m = JSON.parse(line);
    } catch {
      m = undefined;
    }
    handle(m);
  });
}

/**
 * Each message starts on a line of its own: app code can write on fd 3 too, and a line it left unfinished (a write
 * cut short on the non-blocking socket) would otherwise swallow the next message, e.g. its own revision's `ready`.
 */
export function writeMessage(socket: Socket, m: unknown): void {
  if (socket.writable) socket.write('\n' + JSON.stringify(m) + '\n');
}

/** The child's end: fd 3 as a socket (it keeps the process alive only while it has something to wait for). */
export function openChildChannel(): Socket {
  const socket = new Socket({ fd: CHANNEL_FD, readable: true, writable: true });
  socket.on('error', () => socket.destroy());
  return socket;
}
