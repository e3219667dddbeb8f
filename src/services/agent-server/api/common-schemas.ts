import { z } from 'zod';

/**
 * What the request and response schemas of the Agent Server share (each resource's own schemas live beside its
 * routes). Routes validate with these, and the OpenAPI document behind /docs is generated from the same objects, so
 * the reference cannot drift from what the server checks. Optional fields accept null as "absent" (the Python client
 * sends nulls). Unknown fields are ignored, as the public server does.
 */
export const object = () => z.record(z.string(), z.unknown());
export const page = {
  limit: z.number().int().min(1).max(1000).default(10).describe('Most items to return.'),
  offset: z.number().int().min(0).default(0).describe('Items to skip.'),
};
export const sortOrder = z.enum(['asc', 'desc']).nullish().describe('Default: desc.');

/** A query flag as the clients send it: `true`/`false`, `1`/`0` (and the other spellings of z.stringbool). */
export const flag = () => z.stringbool();

/** A query parameter naming one mode, or several as a JSON array (as the JS client sends them). */
export const modeList = <T extends readonly [string, ...string[]]>(modes: T) =>
  z
    .string()
    .transform((text) => [parseMaybeJson(text)].flat())
    .pipe(z.array(z.enum(modes)).min(1))
    .optional();

/** `["a","b"]` → the array; anything else (a bare mode) as it is. */
function parseMaybeJson(text: string): unknown {
  if (!text.trim().startsWith('[')) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export const timestamp = z.iso.datetime();

export const errorSchema = z.object({
  detail: z.union([
    z.string(),
    z.array(z.object({ loc: z.array(z.union([z.string(), z.number()])), msg: z.string(), type: z.string() })),
  ]),
});
