import picomatch from 'picomatch';
import { normalizePath } from './normalize-path.ts';
import { templateMatcher, templateProblem } from './template.ts';
import type { PathCondition } from './types.ts';

/**
 * Path conditions: validation, and a test compiled once per condition.
 *
 * Every test receives the *match path*: the normalised request path with one
 * trailing slash removed (see `matchPath`), so `/runs/query/` is limited as
 * `/runs/query` whatever the upstream does with trailing slashes.
 */
export type PathTest = (path: string) => boolean;

/** The normalised path with a trailing slash dropped (`/` stays `/`). */
export function matchPath(normalizedPath: string): string {
  const n = normalizedPath.length;
  return n > 1 && normalizedPath.charCodeAt(n - 1) === 0x2f ? normalizedPath.slice(0, n - 1) : normalizedPath;
}

const GLOB_SPECIAL = /[*?[\]{}()!+@|\\]/;
const GLOB_OPTIONS = { dot: true, strictBrackets: true } as const;

/** Why a condition is unusable, or null when it is fine. */
export function conditionProblem(c: PathCondition): string | null {
  const v = c.value;
  if (v.length === 0) return `${c.kind} must not be empty`;
  switch (c.kind) {
    case 'path':
    case 'prefix':
      return normalProblem(c.kind, v);
    case 'contains':
      return null;
    case 'glob':
      if (v[0] !== '/' && v[0] !== '*') return `bad glob "${v}": request paths start with "/", so it can never match`;
      try {
        picomatch(v, GLOB_OPTIONS);
        return null;
      } catch (err) {
        return `bad glob "${v}": ${(err as Error).message}`;
      }
    case 'template':
      return normalProblem('template', v) ?? templateProblem(v);
  }
}

function normalProblem(kind: string, v: string): string | null {
  if (v[0] !== '/') return `${kind} "${v}" must start with "/"`;
  if (v.length > 1 && v.endsWith('/'))
    return `${kind} "${v}" must not end with "/" (trailing slashes are ignored when matching)`;
  let normal: string;
  try {
    normal = normalizePath(v);
  } catch (err) {
    return `${kind} "${v}": ${(err as Error).message}`;
  }
  if (normal !== v) return `${kind} "${v}" is not a normalised path (requests are matched as "${normal}")`;
  return null;
}

/** Builds the test of a valid condition (see `conditionProblem`). */
export function compileCondition(c: PathCondition): PathTest {
  const v = c.value;
  switch (c.kind) {
    case 'path':
      return (p) => p === v;
    case 'prefix': {
      if (v === '/') return () => true;
      const below = v + '/';
      return (p) => p === v || p.startsWith(below);
    }
    case 'contains':
      return (p) => p.includes(v);
    case 'glob': {
      const suffix = globSuffix(v);
      if (suffix !== null) return (p) => p.endsWith(suffix);
      return globMatcher(v);
    }
    case 'template': {
      return templateMatcher(v);
    }
  }
}

// A glob of the form "**" + "/<literal>" is "any path ending in /<literal>": returns
// "/<literal>" for it (a suffix test beats a regex), or null for other globs.
export function globSuffix(glob: string): string | null {
  return glob.startsWith('**/') && !GLOB_SPECIAL.test(glob.slice(3)) ? glob.slice(2) : null;
}

export function globMatcher(glob: string): PathTest {
  return picomatch(glob, GLOB_OPTIONS);
}
