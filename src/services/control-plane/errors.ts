/**
 * Errors of the control plane API. Rendered as the public API does:
 * `{"detail": "..."}`, or for a request that fails validation (422)
 * `{"detail": [{"loc": [...], "msg": "...", "type": "..."}]}`. Never a stack.
 */
import type { ValidationIssue } from '../shared/validation-issues.ts';

export type { ValidationIssue } from '../shared/validation-issues.ts';

export class ApiError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 405 | 413 | 422 | 500 | 503,
    readonly detail: string | readonly ValidationIssue[],
  ) {
    super(typeof detail === 'string' ? detail : detail.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; '));
    this.name = 'ApiError';
  }

  toJSON(): { detail: string | readonly ValidationIssue[] } {
    return { detail: this.detail };
  }
}

export const badRequest = (detail: string) => new ApiError(400, detail);
export const deploymentNotFound = (id: string) => new ApiError(404, `Deployment ID ${id} not found.`);
export const revisionNotFound = (id: string) => new ApiError(404, `Revision ID ${id} not found.`);
export const invalid = (...issues: ValidationIssue[]) => new ApiError(422, issues);

/** The store could not answer (Redis down or too slow): 503, the client may retry. */
export class StoreUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailable';
  }
}
