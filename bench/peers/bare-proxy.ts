/**
 * The floor the edge is measured against: the least a Node reverse proxy does. A node:http server and one undici Pool
 * to one upstream, the response streamed back as it arrives. No rules, no rate limiting, no logs, no metrics, no
 * request id; hop-by-hop headers dropped both ways, nothing else touched. Keep-alive on both sides, with the edge's
 * settings: as many upstream connections as the edge's pools (MAX_CONNECTIONS, default 10,000, the edge's default), a
 * 30 s upstream keep-alive, 65 s towards the client. What the edge costs beyond this is the cost of its features.
 * Used by bench/edge.ts only.
 *
 * Environment:
 *   PORT             listen port on loopback (default 0 = any free port)
 *   UPSTREAM_URL     where every request is forwarded, path and query unchanged (required)
 *   MAX_CONNECTIONS  most upstream connections (the Pool's `connections`) and most client connections (default 10000)
 *
 * Prints one JSON line `{"msg":"bare proxy listening","port":N}` on stdout.
 */
import { createServer, type IncomingHttpHeaders, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool, type Dispatcher } from 'undici';
import { HOP_BY_HOP } from '../../src/proxy/headers.ts';

const upstream = process.env.UPSTREAM_URL;
if (!upstream) throw new Error('UPSTREAM_URL is required');
const connections = Number(process.env.MAX_CONNECTIONS ?? 10_000);
const pool = new Pool(new URL(upstream).origin, { connections, keepAliveTimeout: 30_000 });

/** The edge's hop-by-hop set (src/proxy/headers.ts), plus `host`: undici sets the upstream's. */
const DROPPED = new Set([...HOP_BY_HOP, 'host']);

function endToEnd(headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const name in headers) if (!DROPPED.has(name)) out[name] = headers[name];
  return out;
}

/** undici writes the body into the returned writable and ends it; a client that goes away aborts the request. */
const respond = ({ statusCode, headers, opaque }: Dispatcher.StreamFactoryData<ServerResponse>) => {
  opaque.writeHead(statusCode, endToEnd(headers));
  return opaque;
};

const server = createServer({ requireHostHeader: false }, (req, res) => {
  const method = req.method as Dispatcher.HttpMethod;
  pool.stream(
    {
      path: req.url ?? '/',
      method,
      headers: endToEnd(req.headers) as Record<string, string | string[]>,
      body: method === 'GET' || method === 'HEAD' ? null : req,
      opaque: res,
      bodyTimeout: 0,
    },
    respond,
    (err) => {
      if (err === null) return;
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy(err);
    },
  );
});
server.keepAliveTimeout = 65_000;
server.maxConnections = connections;

server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(JSON.stringify({ msg: 'bare proxy listening', port: (server.address() as AddressInfo).port }));
});

process.once('SIGTERM', () => {
  server.close();
  void pool.close().finally(() => process.exit(0));
});
