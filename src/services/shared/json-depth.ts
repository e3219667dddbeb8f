import { invalid } from './api-error.ts';

/** Default of MAX_JSON_DEPTH: how deeply arrays and objects may nest in a request body. */
export const DEFAULT_MAX_JSON_DEPTH = 64;

/**
 * The deepest nesting of `[` and `{` in JSON text, counted outside strings, in one pass without recursion (so the
 * check cannot overflow the stack it protects); it stops counting once past `max`. Malformed text is left to
 * JSON.parse.
 */
export function jsonNestingExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c /* \ */) i++;
      else if (ch === 0x22 /* " */) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x5b /* [ */ || ch === 0x7b /* { */) {
      if (++depth > max) return true;
    } else if (ch === 0x5d /* ] */ || ch === 0x7d /* } */) depth--;
  }
  return false;
}

/** 422 `json_too_deep` in the public shape when `text` nests deeper than `max`; before JSON.parse sees it. */
export function assertJsonDepth(text: string, max: number): void {
  if (jsonNestingExceeds(text, max))
    throw invalid({
      loc: ['body'],
      msg: `Request body is nested deeper than ${max} levels (MAX_JSON_DEPTH)`,
      type: 'json_too_deep',
    });
}
