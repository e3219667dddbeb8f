import { request as httpRequest, STATUS_CODES, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Duplex } from 'node:stream';
import { badGateway, gatewayTimeout } from '../errors.ts';
import type { Upstream } from './forward.ts';
import { clientResponseHeaders } from './headers.ts';

/**
 * A WebSocket upgrade sent on to its upstream, on a connection of its own (outside the upstream's pool: an upgraded
 * connection is never returned to one). The upstream answers 101 (the two sockets are then piped, ws-tunnel.ts) or
 * any other response, which the client gets as it is (a 403, a 404), with the edge's headers added.
 */
export type UpgradeOutcome =
  | { readonly kind: 'upgraded'; readonly response: IncomingMessage; readonly socket: Duplex; readonly head: Buffer }
  | { readonly kind: 'answered'; readonly response: IncomingMessage };

/**
 * Sends the upgrade. `headers`: the client's after the edge's header hygiene (hop-by-hop ones gone). No extension is
 * offered (`Sec-WebSocket-Extensions` is dropped): with permessage-deflate the edge could not read the client's
 * commands, and an upstream that answers with an extension anyway is refused (502). Rejects with a GatewayError: 504
 * when nothing answered within `timeoutMs`, else 502.
 */
export function openUpstream(
  upstream: Upstream,
  path: string,
  headers: Record<string, string | string[]>,
  timeoutMs: number,
): Promise<UpgradeOutcome> {
  const name = upstream.display ?? upstream.name;
  if (upstream.origin === undefined) return Promise.reject(badGateway(`Upstream ${name} takes no WebSocket`));
  const sent: Record<string, string | string[]> = { ...headers, ...upstream.requestHeaders };
  delete sent['sec-websocket-extensions'];
  sent.connection = 'Upgrade';
  sent.upgrade = 'websocket';
  const url = new URL(upstream.basePath + path, upstream.origin);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const at = upstream.socketPath !== undefined ? { socketPath: upstream.socketPath } : {};
    const req = send(url, { method: 'GET', headers: sent, agent: false, ...at });
    const timer = setTimeout(
      () => req.destroy(gatewayTimeout(`Upstream ${name} did not answer the upgrade within ${timeoutMs} ms`)),
      timeoutMs,
    );
    req.on('upgrade', (response: IncomingMessage, socket: Duplex, head: Buffer) => {
      clearTimeout(timer);
      if (response.headers['sec-websocket-extensions'] !== undefined) {
        socket.destroy();
        reject(badGateway(`Upstream ${name} answered with a WebSocket extension the client was not offered`));
        return;
      }
      resolve({ kind: 'upgraded', response, socket, head });
    });
    req.on('response', (response: IncomingMessage) => {
      clearTimeout(timer);
      resolve({ kind: 'answered', response });
    });
    req.on('error', (err: Error & { code?: string }) => {
      clearTimeout(timer);
      if (err.name === 'GatewayError') return reject(err);
      reject(badGateway(`Upstream ${name} unreachable${err.code ? ` (${err.code})` : ''}`, err));
    });
    req.end();
  });
}

/** The head of the client's `101 Switching Protocols`: the upstream's headers (hop-by-hop ones gone), the edge's. */
export function switchingProtocolsHead(response: IncomingMessage, extra: OutgoingHttpHeaders): string {
  return rawHead(101, {
    upgrade: 'websocket',
    connection: 'Upgrade',
    ...clientResponseHeaders(response.headers),
    ...extra,
  });
}

/**
 * The upstream answered the upgrade without switching: its response goes to the client as it came (body decoded by
 * Node's parser, sent delimited by the connection's close), then the connection closes.
 */
export function relayAnswer(response: IncomingMessage, client: Duplex, extra: OutgoingHttpHeaders): void {
  const headers = { ...clientResponseHeaders(response.headers), ...extra, connection: 'close' };
  const status = response.statusCode ?? 502;
  client.write(rawHead(status, headers));
  response.pipe(client);
  response.on('error', () => client.destroy());
}

/** An HTTP/1.1 response head, written straight on a socket (no ServerResponse exists for an upgrade request). */
export function rawHead(status: number, headers: OutgoingHttpHeaders): string {
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n`;
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) head += `${name}: ${String(v)}\r\n`;
  }
  return head + '\r\n';
}
