import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { connectRaw } from './raw-http.ts';

/**
 * A WebSocket client over a bare socket, for frames no well-behaved client sends: unmasked, oversized, with reserved
 * bits or opcodes. `handshake` upgrades and returns the socket with what followed the 101; `frame` builds one frame.
 */
export async function handshake(
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ socket: Socket; head: string; received: Buffer[] }> {
  const socket = await connectRaw(port);
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
      `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n${extra}\r\n`,
  );
  const received: Buffer[] = [];
  const head = await new Promise<string>((resolve, reject) => {
    let data = Buffer.alloc(0);
    const onData = (c: Buffer) => {
      data = Buffer.concat([data, c]);
      const end = data.indexOf('\r\n\r\n');
      if (end === -1) return;
      socket.off('data', onData);
      received.push(data.subarray(end + 4));
      socket.on('data', (more: Buffer) => received.push(more));
      resolve(data.subarray(0, end).toString('latin1'));
    };
    socket.on('data', onData);
    socket.once('error', reject);
  });
  return { socket, head, received };
}

/** One frame: `opcode`, FIN, masked unless `mask: false`; `length` overrides the stated payload length. */
export function frame(
  opcode: number,
  payload: Buffer | string,
  { fin = true, mask = true, rsv = 0, length }: { fin?: boolean; mask?: boolean; rsv?: number; length?: number } = {},
): Buffer {
  const body = Buffer.from(payload);
  const stated = length ?? body.length;
  const first = (fin ? 0x80 : 0) | (rsv << 4) | opcode;
  let head: Buffer;
  if (stated < 126) head = Buffer.from([first, stated]);
  else if (stated < 65536) {
    head = Buffer.from([first, 126, 0, 0]);
    head.writeUInt16BE(stated, 2);
  } else {
    head = Buffer.alloc(10);
    head[0] = first;
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(stated), 2);
  }
  if (!mask) return Buffer.concat([head, body]);
  head[1]! |= 0x80;
  const key = randomBytes(4);
  const masked = Buffer.from(body.map((b, i) => b ^ key[i % 4]!));
  return Buffer.concat([head, key, masked]);
}

/** The close code of the first close frame the server sent (unmasked), once the socket ends; null if none. */
export function closeCodeOf(received: Buffer[]): number | null {
  const data = Buffer.concat(received);
  let at = 0;
  while (at + 2 <= data.length) {
    const opcode = data[at]! & 0x0f;
    let len = data[at + 1]! & 0x7f;
    let start = at + 2;
    if (len === 126) {
      len = data.readUInt16BE(at + 2);
      start = at + 4;
    } else if (len === 127) {
      len = Number(data.readBigUInt64BE(at + 2));
      start = at + 10;
    }
    if (opcode === 0x8) return len >= 2 ? data.readUInt16BE(start) : 1005;
    at = start + len;
  }
  return null;
}

export function ended(socket: Socket): Promise<void> {
  if (socket.destroyed) return Promise.resolve();
  return new Promise((resolve) => socket.once('close', () => resolve()));
}
