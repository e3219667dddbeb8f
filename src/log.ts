import pino, { type Logger } from 'pino';

/**
 * The root logger: JSON lines on stdout, written asynchronously so logging
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

export function createLogger(level: string, destination: LogDestination = pino.destination({ sync: false })): Logger {
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
