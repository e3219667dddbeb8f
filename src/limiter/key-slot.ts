/**
 * Redis Cluster hash slot of a key (CRC16/XMODEM of the key, or of its hash
 * tag, mod 16384), as in the Redis Cluster specification. ioredis computes the
 * same with `cluster-key-slot` but does not export it, and importing a
 * dependency's dependency would break the day ioredis drops it.
 */

const TABLE = new Uint16Array(256);
for (let i = 0; i < 256; i++) {
  let crc = i << 8;
  for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  TABLE[i] = crc;
}

function crc16(bytes: Uint8Array, start: number, end: number): number {
  let crc = 0;
  for (let i = start; i < end; i++) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ bytes[i]!) & 0xff]!;
  return crc;
}

const OPEN = 0x7b; // '{'
const CLOSE = 0x7d; // '}'

export function keySlot(key: string): number {
  const bytes = Buffer.from(key, 'utf8');
  // Only the first '{' counts, and only when a '}' follows it with at least one byte between.
  const open = bytes.indexOf(OPEN);
  if (open !== -1) {
    const close = bytes.indexOf(CLOSE, open + 1);
    if (close > open + 1) return crc16(bytes, open + 1, close) & 16383;
  }
  return crc16(bytes, 0, bytes.length) & 16383;
}
