import { InvalidPathError } from '../rules/normalize-path.ts';

/**
 * The path-and-query of a request target, as the edge takes it (RFC 9112 §3.2): origin form (`/p?q`), or absolute
 * form (`http://host/p?q`) as proxies send it. A backslash in the path is refused: servers disagree on whether it
 * separates segments, so no rule could be sure to count what the upstream serves. Any other form is refused too.
 * The edge answers either refusal 400 `invalid_path`; `gateway explain` says so.
 */
export function requestTarget(url: string): string {
  const backslash = url.indexOf('\\');
  const query = url.indexOf('?');
  if (backslash !== -1 && (query === -1 || backslash < query))
    throw new InvalidPathError('backslash in the path (servers disagree on whether it separates segments)');
  if (url.startsWith('/')) return url;
  if (/^https?:\/\//i.test(url)) {
    const parsed = URL.canParse(url) ? new URL(url) : null;
    if (parsed) return parsed.pathname + parsed.search;
  }
  throw new InvalidPathError(`unsupported request target "${url.slice(0, 64)}"`);
}
