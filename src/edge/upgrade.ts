import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import {
  badRequest,
  draining as drainingError,
  GatewayError,
  rawErrorResponse,
  rawJsonResponse,
  tooManyWebSockets,
} from '../errors.ts';
import { asHeaders, offeredCredential } from '../keys/handshake-credentials.ts';
import type { Lease } from '../limiter/types.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { Upstream } from '../proxy/forward.ts';
import { openUpstream, relayAnswer, switchingProtocolsHead } from '../proxy/upgrade.ts';
import type { HeldCommand } from '../proxy/ws-inspect.ts';
import { Tunnel, type Refusal } from '../proxy/ws-tunnel.ts';
import { admission, asGatewayError, deniedBody, type AdmissionRecord } from './admission.ts';
import { requestIdOf, type EdgeOptions } from './handler.ts';
import { holdPastClose, releaseWhenClosed } from './slot-hold.ts';
import type { Verdict } from './limit.ts';
import { requestRecorder } from './request-record.ts';
import { commandsPath, threadOf, WORK_METHODS } from './ws-commands.ts';
import type { OpenWebSockets } from './websockets.ts';

export interface UpgradeOptions extends Omit<EdgeOptions, 'forward'> {
  readonly sockets: OpenWebSockets;
  /** UPSTREAM_TIMEOUT: the upstream's answer to the upgrade must come within it (504). */
  readonly upstreamTimeoutMs: number;
  /** WEBSOCKET_IDLE_TIMEOUT: no byte either way for this long closes a socket (1001). */
  readonly idleMs: number;
  /** MAX_BODY: the longest message a client may send inside a socket (longer closes it, 1009). */
  readonly maxMessageBytes: number;
}

/** How much of a client message the edge reads to find a command's method: a command is small, its input may not be. */
const INSPECT_BYTES = 64 * 1024;

/** How long a refused upgrade's connection may stay open for its answer to leave (nothing more is read from it). */
const REFUSED_LINGER_MS = 5000;

/**
 * A WebSocket upgrade through the edge. At the upgrade it is a request like any other: request id, path, Host, route,
 * identity, the same limit step (429 with RateLimit headers, written on the socket), and a place among the client
 * address's open sockets (WEBSOCKET_MAX_PER_IP). Then the upgrade goes to the upstream with the edge's header hygiene
 * and, on its 101, the two sockets are piped (ws-tunnel.ts). Inside a socket on `/threads/{id}/stream/events`, each
 * command that starts work is limited as `POST /threads/{id}/commands` by the same identity; over the limit the socket
 * closes with 4429 (4000 + the HTTP status, as the protocol's servers close for a refusal; the SDK then fails the
 * command with status 429 and reconnects after a backoff). A refused upgrade's connection reads nothing more: no
 * second request can follow it.
 */
export function edgeUpgradeHandler(options: UpgradeOptions) {
  const { limit, log, metrics, sockets } = options;
  const draining = options.draining ?? (() => false);
  const recordRequest = requestRecorder(log, metrics);
  const admit = admission(options);

  return async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy()); // a client gone mid-handshake: nothing to answer
    const started = performance.now();
    const requestId = requestIdOf(req);
    const method = req.method ?? 'GET';
    const record: AdmissionRecord = { path: '', deployment: undefined, verdict: null };
    let upstream: Upstream | null = null;
    let status = 0;
    let reserved: string | null = null;
    try {
      // RFC 6455 §4.1: an opening handshake is a GET.
      if (method !== 'GET') throw badRequest('A WebSocket upgrade must be a GET request');
      if (draining()) throw drainingError();
      const admitted = await admit(req, requestId, record, {
        countedHeaders,
        // Bounded before any token is spent: an address at its cap is refused cheaply.
        beforeLimit: ({ counted }) => {
          if (!sockets.reserve(counted.ip)) throw tooManyWebSockets(sockets.maxPerIp);
          reserved = counted.ip;
        },
      });
      if (!admitted.admitted) {
        status = 429;
        refuse(socket, deniedResponse(admitted.verdict, requestId));
        return;
      }
      const { destination, forwarded, tenant, verdict } = admitted;
      const counted = admitted.identity.counted;
      upstream = admitted.upstream;
      const outcome = await openUpstream(upstream, admitted.upstreamPath, forwarded, options.upstreamTimeoutMs);
      const extra = { ...verdict?.headers, 'x-request-id': requestId };
      if (outcome.kind === 'answered') {
        status = outcome.response.statusCode ?? 502;
        relayAnswer(outcome.response, socket, extra);
        linger(socket);
        return;
      }
      if (!socket.writable) {
        outcome.socket.destroy();
        status = 499;
        return;
      }
      status = 101;
      socket.write(switchingProtocolsHead(outcome.response, extra));
      releaseWhenClosed(verdict, socket);
      const ip = counted.ip;
      const commands = commandsPath(destination.path);
      const thread = threadOf(destination.path);
      const runs = options.runs;
      const waitAs = { ...forwarded, ...credentialHeader(req.headers) };
      const holdThread =
        runs === undefined || thread === null
          ? null
          : (lease: Lease) => runs.holdThread(lease, upstream!, thread, waitAs);
      const decide = commandDecider(
        async () => {
          const commandVerdict = await limit({ method: 'POST', path: commands!, headers: counted.headers, ip, tenant });
          // Held while its socket is open, then until the thread's runs end: closing the socket frees nothing early.
          holdPastClose(commandVerdict, socket, holdThread);
          return commandVerdict;
        },
        metrics,
        log.child({ requestId }),
      );
      const tunnel: Tunnel = new Tunnel(socket, outcome.socket, head, outcome.head, {
        inspect: {
          workMethods: commands === null ? new Set() : WORK_METHODS,
          inspectBytes: INSPECT_BYTES,
          maxMessageBytes: options.maxMessageBytes,
        },
        idleMs: options.idleMs,
        decide,
        onClosed: (why) => {
          sockets.closed(tunnel, ip);
          log.debug({ requestId, why }, 'websocket closed');
        },
      });
      sockets.opened(tunnel);
      reserved = null; // the socket holds the place now: released when it closes
      // A drain that began during the handshake: this socket closes with the others.
      if (draining()) tunnel.close(1001, 'gateway draining');
    } catch (err) {
      const error = asGatewayError(err);
      status = error.status;
      if (error.status >= 500 && !(err instanceof GatewayError)) log.error({ err, requestId }, 'edge failure');
      refuse(socket, rawErrorResponse(error, { ...record.verdict?.headers, 'x-request-id': requestId }));
    } finally {
      const { path, deployment, verdict } = record;
      if (reserved !== null) sockets.release(reserved);
      if (status !== 101) void verdict?.lease?.release();
      metrics?.webSocketsTotal.inc({ result: status === 101 ? 'upgraded' : 'refused' });
      recordRequest({ requestId, method, path, verdict, status, upstream, deployment, started });
    }
  };
}

/** A socket's work commands, limited as their HTTP twin: allowed (or no rule), or the close code that refuses. */
function commandDecider(
  limitCommand: (command: HeldCommand) => Promise<Verdict | null>,
  metrics: Metrics | undefined,
  log: Logger,
): (command: HeldCommand) => Promise<Refusal | null> {
  return async (command) => {
    const verdict = await limitCommand(command);
    const decision = verdict?.decision ?? 'unlimited';
    metrics?.webSocketCommands.inc({ rule: verdict?.match.rule.id ?? '', decision });
    if (verdict === null || decision === 'allowed' || decision === 'shadow-denied') return null;
    log.info({ method: command.method, rule: verdict.match.rule.id, decision }, 'websocket command refused');
    if (decision === 'store-down') return { code: 4503, reason: 'Rate limit store unavailable' };
    return {
      code: 4429,
      reason: `Rate limit exceeded: rule ${verdict.match.rule.id.slice(0, 40)}, retry after ${verdict.retryAfter ?? 1} s`,
    };
  };
}

/** The 429 of a denied upgrade: the body and headers a denied HTTP request gets. */
function deniedResponse(verdict: Verdict, requestId: string): string {
  return rawJsonResponse(429, deniedBody(verdict), { ...verdict.headers, 'x-request-id': requestId });
}

/**
 * Answers a refused upgrade and closes its connection. Whatever the client sent after the request (a second request,
 * another upgrade, frames) is read and dropped, never parsed: the connection serves nothing more.
 */
function refuse(socket: Duplex, response: string): void {
  if (!socket.writable) return void socket.destroy();
  socket.end(response);
  linger(socket);
}

/** A connection that serves nothing more: what it sends is dropped unread, and it is cut if it stays open. */
function linger(socket: Duplex): void {
  socket.resume();
  setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref();
}

/**
 * A browser cannot set headers on a WebSocket: it offers its key as the subprotocol (`["x-api-key", key]`) or a
 * same-site cookie, as the Agent Server reads it. The socket is counted by that key as a request is by its
 * `x-api-key` (else a key's limits would not hold for its browser clients); only the count sees it, the upstream gets
 * the handshake as sent.
 */
function countedHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  if (headers['sec-websocket-protocol'] === undefined && headers.cookie === undefined) return headers;
  const offered = offeredCredential(asHeaders(headers));
  return offered?.header === 'x-api-key' ? { ...headers, 'x-api-key': offered.value } : headers;
}

/** A credential offered as the subprotocol or a cookie, as the header a plain request carries it in (for the waits). */
function credentialHeader(headers: IncomingHttpHeaders): Record<string, string> {
  const offered = offeredCredential(asHeaders(headers));
  return offered === null ? {} : { [offered.header]: offered.value };
}
