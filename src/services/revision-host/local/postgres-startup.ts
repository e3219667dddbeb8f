/**
 * The first packet a PostgreSQL client sends (protocol 3.0): a length, a
 * code, then for a startup `name\0value\0 ... \0`. Read here so the
 * forwarder (postgres-forward.ts) lets a connection through only as its
 * deployment's role to its deployment's database, whatever the server's
 * pg_hba.conf trusts from the gateway's address.
 */
export type FirstPacket =
  | { readonly kind: 'startup'; readonly params: ReadonlyMap<string, string> }
  /** SSLRequest or GSSENCRequest: answered `N` here (the socket is local; see postgres-forward.ts). */
  | { readonly kind: 'encryption' }
  /** CancelRequest: a backend's pid and secret key, forwarded as is (the secret authenticates it). */
  | { readonly kind: 'cancel' }
  | { readonly kind: 'invalid'; readonly why: string };

export const PROTOCOL_3 = 196_608;
const CANCEL_REQUEST = 80_877_102;
const SSL_REQUEST = 80_877_103;
const GSSENC_REQUEST = 80_877_104;
/** PostgreSQL's own bound of a startup packet. */
export const MAX_STARTUP_BYTES = 10_000;

/** The packet's length once 4 bytes are there (null before), or -1 when it cannot be one. */
export function packetLength(buf: Buffer): number | null {
  if (buf.length < 4) return null;
  const n = buf.readInt32BE(0);
  return n < 8 || n > MAX_STARTUP_BYTES ? -1 : n;
}

/** One whole first packet (`packetLength` bytes). */
export function parseFirstPacket(packet: Buffer): FirstPacket {
  const code = packet.readInt32BE(4);
  if (code === SSL_REQUEST || code === GSSENC_REQUEST)
    return packet.length === 8 ? { kind: 'encryption' } : { kind: 'invalid', why: 'a malformed encryption request' };
  if (code === CANCEL_REQUEST)
    return packet.length === 16 ? { kind: 'cancel' } : { kind: 'invalid', why: 'a malformed cancel request' };
  if (code !== PROTOCOL_3) return { kind: 'invalid', why: `protocol ${code >> 16}.${code & 0xffff} is not 3.0` };
  const params = new Map<string, string>();
  const fields = packet.toString('utf8', 8).split('\0');
  // name, value, ..., '' (the terminator), '' (after it)
  if (fields.length < 2 || fields.at(-1) !== '' || fields.at(-2) !== '' || fields.length % 2 !== 0)
    return { kind: 'invalid', why: 'a malformed startup packet' };
  for (let i = 0; i + 1 < fields.length - 2; i += 2) params.set(fields[i]!, fields[i + 1]!);
  return { kind: 'startup', params };
}

/** An ErrorResponse (FATAL, with its SQLSTATE) as the server would send it, so a client prints the reason. */
export function errorResponse(code: string, message: string): Buffer {
  const fields = [`SFATAL`, `VFATAL`, `C${code}`, `M${message}`].map((f) => Buffer.from(`${f}\0`, 'utf8'));
  const body = Buffer.concat([...fields, Buffer.from([0])]);
  const head = Buffer.alloc(5);
  head.write('E', 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}
