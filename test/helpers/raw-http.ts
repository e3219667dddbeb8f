import { connect, type Socket } from 'node:net';

/**
 * HTTP/1.1 over a bare socket, for requests no well-behaved client sends:
 * repeated headers, bad escapes, `Connection`-named headers, bodies that
 * never end. Send `Connection: close` (or expect the server to close): the
 * response is read until the socket ends, then parsed.
 */
export interface RawResponse {
  readonly status: number;
  /** Lower-cased names; every value of a repeated header, in order. */
  readonly headers: Readonly<Record<string, string[]>>;
  readonly head: string;
  readonly body: Buffer;
  json(): unknown;
}

export function connectRaw(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Writes `parts` (strings or buffers, in order) and resolves with the response once the server closes the socket. */
export async function rawRequest(port: number, ...parts: (string | Buffer)[]): Promise<RawResponse> {
  const socket = await connectRaw(port);
  const received = collect(socket);
  for (const p of parts) socket.write(p);
  return received;
}

/** Resolves with the response on `socket` once it ends (a reset after a complete head still counts). */
export function collect(socket: Socket, timeoutMs = 5000): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(`no complete response within ${timeoutMs} ms; got:\n${Buffer.concat(chunks).toString('latin1')}`),
      );
    }, timeoutMs);
    const finish = (err?: Error) => {
      clearTimeout(timer);
      const data = Buffer.concat(chunks);
      try {
        resolve(parseResponse(data));
      } catch (parseErr) {
        reject(err ?? parseErr);
      }
    };
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.once('end', () => (socket.destroy(), finish()));
    socket.once('error', (e) => finish(e));
  });
}

export function parseResponse(data: Buffer): RawResponse {
  const end = data.indexOf('\r\n\r\n');
  if (end === -1) throw new Error(`no response head in ${JSON.stringify(data.toString('latin1').slice(0, 200))}`);
  const head = data.subarray(0, end).toString('latin1');
  const [statusLine, ...lines] = head.split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1]);
  if (!status) throw new Error(`bad status line ${JSON.stringify(statusLine)}`);
  const headers: Record<string, string[]> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    (headers[name] ??= []).push(line.slice(colon + 1).trim());
  }
  let body = data.subarray(end + 4);
  if (headers['transfer-encoding']?.some((v) => /chunked/i.test(v))) body = dechunk(body);
  else if (headers['content-length']) body = body.subarray(0, Number(headers['content-length'][0]));
  return { status, headers, head, body, json: () => JSON.parse(body.toString('utf8')) };
}

function dechunk(data: Buffer): Buffer {
  const out: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd === -1) break;
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
    if (!(size > 0)) break;
    out.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(out);
}

/** A request head: request line, headers (a list, so names may repeat), blank line. */
export function head(requestLine: string, headers: readonly (readonly [string, string])[]): string {
  return `${requestLine}\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
}
