import type { z } from 'zod';

/** One item of a 422 answer, in the public API's shape. */
export interface ValidationIssue {
  readonly loc: readonly (string | number)[];
  readonly msg: string;
  readonly type: string;
}

/**
 * Zod issues as the public API's 422 items: `loc` starts with where the value
 * was (body or query); a field that is absent reads "Field required" with type
 * `missing` (also a custom issue that says so with `params.type: "missing"`).
 */
export function validationIssues(error: z.ZodError, where: 'body' | 'query', input: unknown): ValidationIssue[] {
  return error.issues.map((issue) => {
    const custom = issue.code === 'custom';
    const missing =
      (custom && (issue as { params?: { type?: string } }).params?.type === 'missing') ||
      (!custom && issue.path.length > 0 && valueAt(input, issue.path) === undefined);
    return {
      loc: [where, ...issue.path.map((p) => (typeof p === 'number' ? p : String(p)))],
      msg: missing && !custom ? 'Field required' : issue.message,
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
