import type { ErrorCode } from '../errors.ts';

/**
 * The one place a request path is normalised. The edge matches the result and
 * forwards exactly the result, so no client can reach an upstream route
 * through a spelling the rules did not see.
 *
 * Steps, in order:
 *  1. keep the path only (cut at `?` or `#`);
 *  2. turn `\` into `/` (WHATWG URL parsers, and so many upstreams, do);
 *  3. decode percent-encoded unreserved characters (A-Z a-z 0-9 - . _ ~) and
 *     upper-case the hex digits of every other escape (RFC 3986 §6.2.2.1-2);
 *     an invalid escape (`%zz`, `%4`) is an error;
 *  4. collapse runs of `/`;
 *  5. remove `.` and `..` segments (RFC 3986 §5.2.4); `..` never climbs above `/`.
 *
 * Encoded reserved characters stay encoded: they are data, not separators.
 * The exception is an encoded slash or backslash (`%2F`, `%5C`, any case),
 * which many upstreams (Werkzeug, uvicorn/Starlette, ...) decode before
 * routing: what happens to it is `escapedSlashes` (ESCAPED_SLASHES), applied
 * before step 2:
 *  - `reject`: an InvalidPathError (the edge answers 400 `invalid_path`);
 *  - `unescape`: both become `/`, then the steps above run, so the path
 *    matched and forwarded is the one a decoding upstream routes;
 *  - `keep`: left encoded, as data. Unsafe in front of a decoding upstream
 *    (`/runs%2Fquery` is counted as itself and served as `/runs/query`).
 */

export class InvalidPathError extends Error {
  readonly code = 'invalid_path' satisfies ErrorCode;
  constructor(reason: string) {
    super(reason);
    this.name = 'InvalidPathError';
  }
}

/** Envoy's `path_with_escaped_slashes_action`, in the gateway's words. */
export const ESCAPED_SLASHES = ['reject', 'unescape', 'keep'] as const;
export type EscapedSlashes = (typeof ESCAPED_SLASHES)[number];

const ESCAPED_SLASH = /%(?:2f|5c)/i;
const ESCAPED_SLASH_ALL = /%(?:2f|5c)/gi;
const SLASH = 0x2f;
const DOT = 0x2e;
const PERCENT = 0x25;
const BACKSLASH = 0x5c;

/**
 * Returns the normalised path of a request target (origin form: starts with `/`). The edge and `explain` pass
 * ESCAPED_SLASHES; `keep` (the default here) is for rule conditions, which are checked as written.
 */
export function normalizePath(target: string, escapedSlashes: EscapedSlashes = 'keep'): string {
  let end = target.length;
  const q = target.indexOf('?');
  if (q !== -1) end = q;
  const h = target.indexOf('#');
  if (h !== -1 && h < end) end = h;
  if (end === 0 || target.charCodeAt(0) !== SLASH) {
    throw new InvalidPathError('request path must start with "/"');
  }
  const path = end === target.length ? target : target.slice(0, end);
  return isNormal(path) ? path : rewrite(path, escapedSlashes);
}

/** Fast check: no escapes, no backslashes, no empty, `.` or `..` segments. */
function isNormal(path: string): boolean {
  let prev = SLASH; // code of the previous char; path[0] is '/'
  for (let i = 1; i < path.length; i++) {
    const c = path.charCodeAt(i);
    if (c === PERCENT || c === BACKSLASH) return false;
    if (c === SLASH && prev === SLASH) return false;
    if (c === DOT && prev === SLASH) {
      const next = i + 1 < path.length ? path.charCodeAt(i + 1) : SLASH;
      if (next === SLASH) return false;
      if (next === DOT) {
        const after = i + 2 < path.length ? path.charCodeAt(i + 2) : SLASH;
        if (after === SLASH) return false;
      }
    }
    prev = c;
  }
  return true;
}

function rewrite(raw: string, escapedSlashes: EscapedSlashes): string {
  let path = raw;
  if (escapedSlashes !== 'keep' && ESCAPED_SLASH.test(path)) {
    if (escapedSlashes === 'reject')
      throw new InvalidPathError('encoded "/" or "\\" (%2F, %5C) in the path (ESCAPED_SLASHES=reject)');
    path = path.replace(ESCAPED_SLASH_ALL, '/');
  }
  const decoded = decodeUnreserved(path.replaceAll('\\', '/'));
  return removeDotSegments(decoded.replace(/\/{2,}/g, '/'));
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

function isUnreserved(c: number): boolean {
  return (
    (c >= 0x41 && c <= 0x5a) ||
    (c >= 0x61 && c <= 0x7a) ||
    (c >= 0x30 && c <= 0x39) ||
    c === 0x2d ||
    c === DOT ||
    c === 0x5f ||
    c === 0x7e
  );
}

function decodeUnreserved(path: string): string {
  if (!path.includes('%')) return path;
  let out = '';
  let last = 0;
  for (let i = path.indexOf('%'); i !== -1; i = path.indexOf('%', i)) {
    const hi = i + 1 < path.length ? hexValue(path.charCodeAt(i + 1)) : -1;
    const lo = i + 2 < path.length ? hexValue(path.charCodeAt(i + 2)) : -1;
    if (hi < 0 || lo < 0) {
      throw new InvalidPathError(`invalid percent-encoding at offset ${i}`);
    }
    const byte = hi * 16 + lo;
    out += path.slice(last, i);
    out += isUnreserved(byte) ? String.fromCharCode(byte) : '%' + path.slice(i + 1, i + 3).toUpperCase();
    i += 3;
    last = i;
  }
  return out + path.slice(last);
}

/** RFC 3986 §5.2.4 for an absolute path with no empty segments. */
function removeDotSegments(path: string): string {
  const input = path.split('/'); // input[0] is '' (leading slash)
  const out: string[] = [];
  let trailingSlash = false;
  for (let i = 1; i < input.length; i++) {
    const seg = input[i]!;
    const last = i === input.length - 1;
    if (seg === '.' || seg === '..') {
      if (seg === '..') out.pop();
      if (last) trailingSlash = true;
      continue;
    }
    if (seg === '' && last) {
      trailingSlash = true;
      continue;
    }
    out.push(seg);
  }
  if (out.length === 0) return '/';
  return '/' + out.join('/') + (trailingSlash ? '/' : '');
}
