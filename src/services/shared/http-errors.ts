import type { Context, ErrorHandler, NotFoundHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Logger } from 'pino';
import { ApiError } from './api-error.ts';

/**
 * The one place a service's error body is written (the control plane's and the Agent Server's): the error's status,
 * its headers, and `{"detail"}`.
 */
export function apiErrorResponse(c: Context, error: ApiError): Response {
  for (const [name, value] of Object.entries(error.headers)) c.header(name, value);
  return c.json(error.toJSON(), error.status as ContentfulStatusCode);
}

/**
 * How a service's errors leave it. An ApiError answers itself; Hono's HTTPException its status and message; `known`
 * may turn another error into an ApiError (e.g. a store that is down into a 503); anything else is logged with its
 * stack as `<service> failure` and answered `{"detail": "Internal server error."}` with 500.
 */
export function serviceErrorHandler(
  log: Logger,
  service: string,
  known: (err: Error) => ApiError | null = () => null,
): ErrorHandler {
  return function onError(err: Error, c: Context): Response {
    const answer = err instanceof ApiError ? err : known(err);
    if (answer !== null) return apiErrorResponse(c, answer);
    if (err instanceof HTTPException)
      return apiErrorResponse(c, new ApiError(err.status, err.message || 'Bad request'));
    log.error(
      { err: { type: err.name, message: err.message, stack: err.stack }, path: c.req.path, method: c.req.method },
      `${service} failure`,
    );
    return apiErrorResponse(c, new ApiError(500, 'Internal server error.'));
  };
}

export const notFoundJson: NotFoundHandler = (c) => apiErrorResponse(c, new ApiError(404, 'Not Found'));

/** Bodies over `maxBytes` answer 413 `{"detail"}` before a handler reads them. */
export const jsonBodyLimit = (maxBytes: number) =>
  bodyLimit({
    maxSize: maxBytes,
    onError: (c) => apiErrorResponse(c, new ApiError(413, `Request body larger than ${maxBytes} bytes.`)),
  });
