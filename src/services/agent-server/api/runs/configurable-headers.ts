import type { HttpConfig } from '../../../shared/langgraph-config.ts';

/**
 * The request headers a run's graph finds in `config.configurable`, as the official server copies them: every `x-*`
 * header and `user-agent`, except the credentials (`x-api-key`, `x-tenant-id`, `x-service-key`, `authorization`).
 * One difference: the client's address the edge adds (`x-forwarded-for`, `x-real-ip`) is left out by default too, since
 * LangGraph also writes `configurable` into each checkpoint's metadata, which every reader of the thread's history
 * sees. `http.configurable_headers` of langgraph.json changes the set: `include` replaces the default patterns,
 * `exclude` replaces the default exclusions (a `*` in a pattern matches any characters). The credentials are never
 * copied, whatever the lists say.
 */
const NEVER = new Set(['x-api-key', 'x-tenant-id', 'x-service-key', 'authorization', 'cookie', 'proxy-authorization']);
const DEFAULT_INCLUDE = ['x-*', 'user-agent'];
const DEFAULT_EXCLUDE = ['x-forwarded-for', 'x-real-ip'];

export type HeaderFilter = (name: string) => boolean;

export function configurableHeaderFilter(config: HttpConfig['configurableHeaders']): HeaderFilter {
  const include = (config?.include ?? DEFAULT_INCLUDE).map(pattern);
  const exclude = (config?.exclude ?? DEFAULT_EXCLUDE).map(pattern);
  return (name) => !NEVER.has(name) && include.some((p) => p.test(name)) && !exclude.some((p) => p.test(name));
}

/** The headers `filter` lets through, lower-cased names. */
export function configurableHeaders(headers: Headers | undefined, filter: HeaderFilter): Record<string, string> {
  const out: Record<string, string> = {};
  headers?.forEach((value, rawName) => {
    const name = rawName.toLowerCase();
    if (filter(name)) out[name] = value;
  });
  return out;
}

function pattern(text: string): RegExp {
  const escaped = text
    .toLowerCase()
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${escaped}$`);
}
