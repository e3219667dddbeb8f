import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { payloadTooLarge, writeError } from '../errors.ts';

/**
 * A request body left partly read when its response is written (an answer
 * that did not need all of it: 401, 404, 429, an upstream that answered
 * early or failed) would stay on the wire in front of the client's next
 * request on that connection: once a reader has started and stopped, Node
 * does not discard the rest, and the next request waited until a timeout.
 * Two remedies, one per kind of listener:
 * - a service reads every body whole before its app runs (`readBodyFirst`),
 *   so nothing is ever left behind and its connections stay reusable;
 * - the edge streams bodies, so a response that starts before its body has
 *   arrived closes the connection after it (`closeAfterUnreadBody`).
 */
export function closeAfterUnreadBody(handle: RequestListener): RequestListener {
  return (req, res) => {
    if (hasBody(req)) {
      const writeHead = res.writeHead;
      res.writeHead = function (this: ServerResponse, ...args: Parameters<ServerResponse['writeHead']>) {
        if (!req.complete) this.shouldKeepAlive = false;
        return writeHead.apply(this, args);
      } as ServerResponse['writeHead'];
    }
    handle(req, res);
  };
}

/**
 * Reads the body (at most `maxBytes`) into `req.rawBody`, where
 * @hono/node-server takes it from, then hands the request on. A larger body
 * answers the gateway's JSON 413 and closes the connection, unread.
 */
export function readBodyFirst(maxBytes: number, handle: RequestListener): RequestListener {
  return (req, res) => {
    if (!hasBody(req)) return handle(req, res);
    if (Number(req.headers['content-length'] ?? 0) > maxBytes) return tooLarge(res, maxBytes);
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) return void chunks.push(chunk);
      req.off('data', onData);
      req.pause();
      tooLarge(res, maxBytes);
    };
    req.on('data', onData);
    req.once('end', () => {
      if (size > maxBytes) return;
      (req as IncomingMessage & { rawBody?: Buffer }).rawBody = Buffer.concat(chunks, size);
      handle(req, res);
    });
  };
}

function tooLarge(res: ServerResponse, maxBytes: number): void {
  res.shouldKeepAlive = false;
  writeError(res, payloadTooLarge(maxBytes));
}

/** True when the request announces a body (a Content-Length above 0, or chunked). */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}
