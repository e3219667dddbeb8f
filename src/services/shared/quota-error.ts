import { ApiError } from './api-error.ts';

/**
 * A tenant reached one of its quotas. 409, not 429: the state it conflicts with is the tenant's own (its
 * deployments, crons, stored items), waiting does not help, and the public clients retry a 429 with backoff
 * (@langchain/langgraph-sdk retries everything but 400-409 and 422) where a 409 fails at once. The body keeps the
 * public shape `{"detail"}`; its text starts `Quota exceeded (<limit>):`, a stable form a client may match, and says
 * what to do (free some, or which setting the operator raises).
 */
export function quotaExceeded(limit: string, detail: string): ApiError {
  return new ApiError(409, `Quota exceeded (${limit}): ${detail}`);
}
