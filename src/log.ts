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

export function createLogger(level: string, destination = pino.destination({ sync: false })): Logger {
  return pino({ level, base: undefined, redact: { paths: REDACT, censor: '[redacted]' } }, destination);
}
