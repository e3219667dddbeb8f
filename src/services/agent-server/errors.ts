/**
 * Errors of the Agent Server, rendered as the public server does:
 * `{"detail": "..."}`, or for a request that fails validation (422)
 * `{"detail": [{"loc": [...], "msg": "...", "type": "..."}]}`. The JS client
 * shows the body text in its `HTTP <status>: <text>` error. Never a stack.
 */
import type { ValidationIssue } from '../shared/validation-issues.ts';

export { validationIssues, type ValidationIssue } from '../shared/validation-issues.ts';

/** An HTTP error status (4xx or 5xx). */
export type ApiStatus = number;

export class ApiError extends Error {
  constructor(
    readonly status: ApiStatus,
    readonly detail: string | readonly ValidationIssue[],
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(typeof detail === 'string' ? detail : detail.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; '));
    this.name = 'ApiError';
  }

  toJSON(): { detail: string | readonly ValidationIssue[] } {
    return { detail: this.detail };
  }
}

export const notFound = (what: string, id: string) => new ApiError(404, `${what} ${id} not found`);
export const conflict = (detail: string) => new ApiError(409, detail);
export const forbidden = (detail = 'Forbidden') => new ApiError(403, detail);
export const unauthorized = (detail: string) => new ApiError(401, detail);
export const invalid = (...issues: ValidationIssue[]) => new ApiError(422, issues);
