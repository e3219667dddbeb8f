/**
 * The benchmarks' upstream: an HTTP/1.1 server that answers every request
 * with the same canned 100-byte response, keep-alive, on raw TCP. It shares
 * a core with the load generator (and, in practice, with Redis), so it is
 * made as cheap as a correct server gets: no request objects, no header
 * parsing beyond finding where each request ends. A plain `node:http`
 * server used about 30 µs of that core per request, this one about 15, and
 * the difference went to the load generator and Redis instead of queueing
 * behind them (bench/README.md, "The processes").
 *
 * What it understands: requests one after another or pipelined, with no body
 * or a `Content-Length` body (skipped). A chunked request body is not read:
 * it answers 501 and closes. `Connection: close` closes after the answer.
 * Listens on loopback, PORT (default 0 = any free port), and prints one JSON
 * line with the port.
 *
 *   node --import tsx bench/peers/upstream.ts
 */
import { createServer, type Socket } from 'node:net';

const BODY = 'upstream-ok '.padEnd(100, '.');
const response = (status: string, close: boolean, body: string) =>
  Buffer.from(
    `HTTP/1.1 ${status}\r\ncontent-type: text/plain\r\ncontent-length: ${body.length}\r\nconnection: ${close ? 'close' : 'keep-alive'}\r\n\r\n${body}`,
  );
const OK = response('200 OK', false, BODY);
const OK_CLOSE = response('200 OK', true, BODY);
const CHUNKED = response('501 Not Implemented', true, 'chunked request bodies are not read here\n');
const MAX_HEAD = 64 * 1024;

const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*(\d+)/i;
const CHUNKED_BODY = /\r\ntransfer-encoding:[^\r]*chunked/i;
const CLOSE = /\r\nconnection:[^\r]*close/i;

function serve(socket: Socket): void {
  socket.setNoDelay(true);
  let pending = ''; // latin1: one character per byte, so lengths are byte counts
  let skip = 0; // body bytes of the current request still to come
  socket.on('data', (chunk: Buffer) => {
    let data = pending + chunk.toString('latin1');
    pending = '';
    const out: Buffer[] = [];
    for (;;) {
      if (skip > 0) {
        const n = Math.min(skip, data.length);
        skip -= n;
        data = data.slice(n);
        if (skip > 0) break;
      }
      const end = data.indexOf('\r\n\r\n');
      if (end === -1) {
        if (data.length > MAX_HEAD) socket.destroy();
        else pending = data;
        break;
      }
      const head = data.slice(0, end);
      data = data.slice(end + 4);
      if (CHUNKED_BODY.test(head)) {
        socket.end(Buffer.concat([...out, CHUNKED]));
        return;
      }
      skip = Number(CONTENT_LENGTH.exec(head)?.[1] ?? 0);
      if (CLOSE.test(head)) {
        socket.end(Buffer.concat([...out, OK_CLOSE]));
        return;
      }
      out.push(OK);
    }
    if (out.length > 0) socket.write(out.length === 1 ? out[0]! : Buffer.concat(out));
  });
  socket.on('error', () => socket.destroy());
}

const server = createServer(serve);
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  console.log(JSON.stringify({ msg: 'upstream listening', port }));
});
process.once('SIGTERM', () => process.exit(0));
