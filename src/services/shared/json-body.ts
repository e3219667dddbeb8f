import type { Context } from 'hono';
import type { z } from 'zod';
import { ApiError, invalid } from './api-error.ts';
import { assertJsonDepth, DEFAULT_MAX_JSON_DEPTH } from './json-depth.ts';
import { validationIssues } from './validation-issues.ts';

/**
 * The request's JSON body checked against `schema`; 422 in the public shape when it is not JSON or does not fit.
 * An empty body is `{}` (`empty: 'object'`, the Agent Server) or 422 "Field required" (`empty: 'required'`, the
 * control plane). JSON.parse's own message is never echoed: it quotes the input, which may hold secrets. A body nested
 * deeper than `maxDepth` (MAX_JSON_DEPTH) answers 422 `json_too_deep` before it is parsed: deep values overflow the
 * stack of whatever walks them later (a store's serialiser, a graph), and a stack overflow in a run ends the process.
 * Size is bounded before this by the services' body limit (413).
 */
export async function readJsonBody<S extends z.ZodType>(
  c: Context,
  schema: S,
  empty: 'object' | 'required',
  maxDepth: number = DEFAULT_MAX_JSON_DEPTH,
): Promise<z.output<S>> {
  const text = await c.req.text();
  assertJsonDepth(text, maxDepth);
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
