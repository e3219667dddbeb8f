import type { Context } from 'hono';
import type { z } from 'zod';
import { ApiError, invalid } from './api-error.ts';
import { validationIssues } from './validation-issues.ts';

/**
 * The request's JSON body checked against `schema`; 422 in the public shape when it is not JSON or does not fit.
 * An empty body is `{}` (`empty: 'object'`, the Agent Server) or 422 "Field required" (`empty: 'required'`, the
 * control plane). JSON.parse's own message is never echoed: it quotes the input, which may hold secrets.
 */
export async function readJsonBody<S extends z.ZodType>(
  c: Context,
  schema: S,
  empty: 'object' | 'required',
): Promise<z.output<S>> {
  const text = await c.req.text();
  let json: unknown = {};
  if (text.trim() === '') {
    if (empty === 'required') throw invalid({ loc: ['body'], msg: 'Field required', type: 'missing' });
  } else {
    try {
      json = JSON.parse(text);
    } catch {
      throw invalid({ loc: ['body'], msg: 'Request body is not valid JSON.', type: 'json_invalid' });
    }
  }
  return checked(schema, json, 'body');
}

/** `raw` (a query or a body already read) checked against `schema`; 422 naming the fields otherwise. */
export function checked<S extends z.ZodType>(schema: S, raw: unknown, where: 'body' | 'query'): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new ApiError(422, validationIssues(parsed.error, where, raw));
  return parsed.data;
}
