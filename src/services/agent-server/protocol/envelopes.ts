import type { CommandResponse, ErrorCode, ErrorResponse, ResultData } from '@langchain/protocol';
import { ApiError } from '../errors.ts';

/** What a command answers: the protocol's success or error envelope. */
export type Answer = CommandResponse | ErrorResponse;

/** A command refused with one of the protocol's error codes (turned into its error envelope by commands.ts). */
export class CommandError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'CommandError';
  }
}

export const success = (id: number, result: ResultData, meta?: CommandResponse['meta']): CommandResponse => ({
  type: 'success',
  id,
  result,
  ...(meta !== undefined ? { meta } : {}),
});

export const failure = (id: number | null, error: ErrorCode, message: string): ErrorResponse => ({
  type: 'error',
  id,
  error,
  message,
});

/**
 * A failure of a command as its error envelope: a CommandError with its code; an ApiError of the run and thread
 * operations it shares with the REST API by its status (403 `permission_denied`, any other 4xx `invalid_argument`,
 * with the same one-line message); anything else `unknown_error`, without its text (it may be internal).
 */
export function errorAnswer(id: number | null, err: unknown): ErrorResponse {
  if (err instanceof CommandError) return failure(id, err.code, err.message);
  if (err instanceof ApiError && err.status >= 400 && err.status < 500)
    return failure(id, err.status === 403 ? 'permission_denied' : 'invalid_argument', err.message);
  return failure(id, 'unknown_error', 'The command failed on the server.');
}
