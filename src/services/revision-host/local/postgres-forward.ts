import { connect, type Socket } from 'node:net';
import type { Logger } from 'pino';
import { listenForward, type SocketForward } from './socket-forward.ts';
import { errorResponse, packetLength, parseFirstPacket } from './postgres-startup.ts';

/**
 * A revision's only way to its PostgreSQL database: a Unix socket the host
 * owns (named `.s.PGSQL.<port>` in a folder of its own, bound into the
 * sandbox, so a client given that folder as `host` finds it), forwarded
 * connection by connection, as bytes, to the operator's server. PostgreSQL's
 * own authentication (scram, as the deployment's role) protects what goes
 * through; the forwarder adds what the server cannot know from here:
 * - who: the startup packet must name the deployment's role and its database
 *   (else a FATAL 28000 answer and the socket closed), so no tenant tries
 *   another role or `postgres`, even where pg_hba.conf trusts the gateway's
 *   address; no replication connection;
 * - how many: at most `maxConnections` at once (more are closed at accept);
 * - how long to start: a startup not sent within `startupMs` is closed.
 * An SSL or GSS encryption request is answered `N` (the socket is local; TLS
 * from the gateway to the server is not made here); a cancel request goes
 * through as is (its secret key authenticates it).
 */
export type PostgresTarget =
  { readonly host: string; readonly port: number } | { readonly path: string; readonly port: number };

export interface PostgresForwardOptions {
  /** Where to listen (the caller's folder: it must not exist yet). */
  readonly socketPath: string;
  readonly target: PostgresTarget;
  /** The only role and database a connection may name. */
  readonly role: string;
  readonly database: string;
  readonly maxConnections: number;
  readonly startupMs?: number;
  readonly log: Logger;
}

export type PostgresForward = SocketForward;

const STARTUP_MS = 10_000;
const INVALID_AUTHORIZATION = '28000';
const PROTOCOL_VIOLATION = '08P01';

/** At most one warning per this many ms (a tenant opening connections in a loop writes no flood of log lines). */
const WARN_EVERY_MS = 10_000;

export function startPostgresForward(o: PostgresForwardOptions): Promise<PostgresForward> {
  let lastWarning = 0;
  let unsaid = 0;
  const warn = (why: string) => {
    const now = Date.now();
    if (now - lastWarning < WARN_EVERY_MS) return void unsaid++;
    o.log.warn({ why, alsoRefusedSinceLastWarning: unsaid }, 'database connection refused');
    lastWarning = now;
    unsaid = 0;
  };
  return listenForward(
    o.socketPath,
    o.maxConnections,
    (client) => admit(client, o, warn),
    () => warn(`over its bound of ${o.maxConnections} connections`),
  );
}

/** Reads the client's first packet(s), then refuses it or joins it to the server. */
function admit(client: Socket, o: PostgresForwardOptions, warn: (why: string) => void): void {
  let buf = Buffer.alloc(0);
  const timer = setTimeout(() => client.destroy(), o.startupMs ?? STARTUP_MS);
  const refuse = (code: string, message: string) => {
    clearTimeout(timer);
    client.off('data', onData);
    warn(message);
    client.end(errorResponse(code, message));
  };
  const onData = (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk]);
    for (;;) {
      const n = packetLength(buf);
      if (n === null || (n > 0 && buf.length < n)) return;
      if (n === -1) return refuse(PROTOCOL_VIOLATION, 'invalid startup packet length');
      const first = parseFirstPacket(buf.subarray(0, n));
      if (first.kind === 'encryption') {
        buf = buf.subarray(n);
        client.write('N');
        continue;
      }
      if (first.kind === 'invalid') return refuse(PROTOCOL_VIOLATION, first.why);
      if (first.kind === 'startup') {
        const user = first.params.get('user') ?? '';
        const database = first.params.get('database') ?? user;
        if (user !== o.role) return refuse(INVALID_AUTHORIZATION, `this socket serves role "${o.role}" only`);
        if (database !== o.database)
          return refuse(INVALID_AUTHORIZATION, `this socket serves database "${o.database}" only`);
        if (first.params.has('replication'))
          return refuse(INVALID_AUTHORIZATION, 'no replication connection through this socket');
      }
      clearTimeout(timer);
      client.off('data', onData);
      return join(client, buf, o, warn);
    }
  };
  client.on('data', onData);
  client.on('error', () => client.destroy());
  client.once('close', () => clearTimeout(timer));
}

function join(client: Socket, head: Buffer, o: PostgresForwardOptions, warn: (why: string) => void): void {
  client.pause();
  const t = o.target;
  const server = 'path' in t ? connect(t.path) : connect({ host: t.host, port: t.port });
  server.setNoDelay(true);
  const end = () => {
    client.destroy();
    server.destroy();
  };
  server.on('error', (err) => {
    warn(`the deployments\u2019 PostgreSQL cannot be reached: ${err.message}`);
    end();
  });
  server.once('connect', () => {
    server.write(head);
    client.pipe(server);
    server.pipe(client);
    client.resume();
  });
  client.on('close', end);
  server.on('close', end);
}
