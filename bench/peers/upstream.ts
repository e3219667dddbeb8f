/**
 * The benchmark's upstream: plain node:http answering every request with the
 * same 100 bytes, keep-alive. As small as a server gets, so what the edge
 * benchmark measures is the proxy in front of it. Listens on loopback, PORT
 * (default 0 = any free port), and prints one JSON line with the port.
 *
 *   node --import tsx bench/peers/upstream.ts
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const BODY = Buffer.from('upstream-ok '.padEnd(100, '.'));
const HEADERS = { 'content-type': 'text/plain', 'content-length': BODY.length };

// Node discards an unread request body itself when the response ends.
const server = createServer((_req, res) => {
  res.writeHead(200, HEADERS);
  res.end(BODY);
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  console.log(JSON.stringify({ msg: 'upstream listening', port }));
});
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
