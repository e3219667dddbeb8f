import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';

/**
 * The root logger: JSON lines on stdout (LOG_FORMAT=json, the default), written asynchronously so logging
 * never blocks a request. Credentials are redacted wherever they could
 * appear (request headers, errors that carry them); identities never reach
 * a log line in the first place, only rule ids and digests.
 */
export const REDACT = [
  'headers["x-api-key"]',
  'headers.authorization',
  'headers.cookie',
  'headers["set-cookie"]',
  '*.headers["x-api-key"]',
  '*.headers.authorization',
  '*.headers.cookie',
  // The edge's proof to its bundled services (services/internal-auth.ts): a line that dumps a request's headers must
  // not carry it to whoever reads the log.
  'headers["x-gateway-internal"]',
  '*.headers["x-gateway-internal"]',
  'apiKey',
  'secret',
  'value',
];

/** What a logger writes its lines to (a pino destination, or any stream a test passes). */
export interface LogDestination {
  write(lines: string): unknown;
  readonly fd?: unknown;
}

const destinations = new WeakMap<Logger, LogDestination>();

/** LOG_FORMAT: `json` lines for collectors, or `pretty` for a person at a terminal. */
export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/**
 * LOG_FORMAT=pretty: pino's own pretty printer (pino-pretty) as the destination, in this thread: a transport's worker
 * thread would cost every edge worker a thread for a format meant for one person reading. It takes the same JSON
 * lines, so the request lines the access log assembles itself are prettified too. Colours only on a terminal.
 */
export function prettyDestination(out: NodeJS.WritableStream | number = 1): LogDestination {
  const colorize = out === 1 ? process.stdout.isTTY : false;
  return pretty({ destination: out, colorize, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', sync: true });
}

/** `destination`: where lines go, or the format of lines on stdout. */
export function createLogger(level: string, to: LogDestination | LogFormat = 'json'): Logger {
  const destination = to === 'json' ? pino.destination({ sync: false }) : to === 'pretty' ? prettyDestination() : to;
  const log = pino(
    {
      level,
      base: undefined,
      redact: { paths: REDACT, censor: '[redacted]' },
      onChild: (child) => destinations.set(child, destination),
    },
    destination,
  );
  destinations.set(log, destination);
  return log;
}

/**
 * Where a logger made by createLogger, or any child of it, writes: for a writer that assembles pino's lines itself
 * (edge/access-log.ts). Undefined for any other logger.
 */
export function destinationOf(log: Logger): LogDestination | undefined {
  return destinations.get(log);
}

/**
 * Stdout is gone (EPIPE): the logger's destination stops writing, as pino makes its own stream do when one of its
 * writes meets EPIPE. Otherwise the flush pino runs at exit retries its write to the closed pipe for ever (sonic-boom
 * retries every error of a synchronous flush), and the process never exits.
 */
export function silenceLogger(log: Logger): void {
  const destination = destinations.get(log) as Record<string, unknown> | undefined;
  if (destination === undefined) return;
  const noop = () => {};
  for (const method of ['write', 'flushSync', 'flush', 'end', 'destroy'])
    if (typeof destination[method] === 'function') destination[method] = noop;
}
