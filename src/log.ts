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

/**
 * Lines are gathered up to 4 KiB before one write (a write per line costs a
 * system call per request under load), and written at the latest after
 * 100 ms; pino writes what is left synchronously when the process exits.
 */
export function createLogger(level: string, destination = pino.destination({ sync: false, minLength: 4096, periodicFlush: 100 })): Logger {
  return pino({ level, base: undefined, redact: { paths: REDACT, censor: '[redacted]' } }, destination);
}
