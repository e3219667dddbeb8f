import type { Context, ErrorHandler, NotFoundHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Logger } from 'pino';
import { ApiError } from './api-error.ts';

/**
 * How a service's errors leave it: one renderer for the control plane and the Agent Server. An ApiError answers its
 * status, headers and `{"detail"}`; Hono's HTTPException its status; `known` may turn another error into an ApiError
 * (e.g. a store that is down into a 503); anything else is logged with its stack as `<service> failure` and answered
 * `{"detail": "Internal server error."}` with 500.
 */
export function serviceErrorHandler(
  log: Logger,
  service: string,
  known: (err: Error) => ApiError | null = () => null,
): ErrorHandler {
  return function onError(err: Error, c: Context): Response {
    const answer = err instanceof ApiError ? err : known(err);
    if (answer !== null) {
      for (const [name, value] of Object.entries(answer.headers)) c.header(name, value);
      return c.json(answer.toJSON(), answer.status as ContentfulStatusCode);
    }
    if (err instanceof HTTPException) return c.json({ detail: err.message || 'Bad request' }, err.status);
    log.error(
      { err: { type: err.name, message: err.message, stack: err.stack }, path: c.req.path, method: c.req.method },
      `${service} failure`,
    );
    return c.json({ detail: 'Internal server error.' }, 500);
  };
}

export const notFoundJson: NotFoundHandler = (c) => c.json({ detail: 'Not Found' }, 404);

/** Bodies over `maxBytes` answer 413 `{"detail"}` before a handler reads them. */
export const jsonBodyLimit = (maxBytes: number) =>
  bodyLimit({
    maxSize: maxBytes,
    onError: (c) => c.json({ detail: `Request body larger than ${maxBytes} bytes.` }, 413),
  });
