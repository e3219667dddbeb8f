import type { ValidationIssue } from './validation-issues.ts';

/**
 * An error a service answers on purpose, in the public API's shape: `{"detail": "..."}`, or for a request that fails
 * validation (422) `{"detail": [{"loc": [...], "msg": "...", "type": "..."}]}`. The public clients show the body text
 * in their `HTTP <status>: <text>` error. Rendered by http-errors.ts; never a stack.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
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

export const invalid = (...issues: ValidationIssue[]) => new ApiError(422, issues);
