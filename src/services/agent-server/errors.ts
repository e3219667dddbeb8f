import type { z } from 'zod';

/**
 * Errors of the Agent Server, rendered as the public server does:
 * `{"detail": "..."}`, or for a request that fails validation (422)
 * `{"detail": [{"loc": [...], "msg": "...", "type": "..."}]}`. The JS client
 * shows the body text in its `HTTP <status>: <text>` error. Never a stack.
 */
export interface ValidationIssue {
  readonly loc: readonly (string | number)[];
  readonly msg: string;
  readonly type: string;
}

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

/** Zod issues in the public 422 shape; a field that is absent reads "Field required". */
export function validationIssues(error: z.ZodError, where: 'body' | 'query', input: unknown): ValidationIssue[] {
  return error.issues.map((issue) => {
    const missing = issue.path.length > 0 && valueAt(input, issue.path) === undefined;
    return {
      loc: [where, ...issue.path.map((p) => (typeof p === 'number' ? p : String(p)))],
      msg: missing ? 'Field required' : issue.message,
      type: missing ? 'missing' : issue.code,
    };
  });
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input;
  for (const key of path) {
    if (typeof v !== 'object' || v === null) return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}
