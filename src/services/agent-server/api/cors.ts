import type { MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';
import type { CorsConfig } from '../../shared/langgraph-config.ts';

/**
 * CORS, as the official server answers it, before authentication (a browser's preflight carries no credentials).
 * Without `http.cors` in langgraph.json: any origin, exposing the headers the JS client reads: `Content-Location`
 * (a run's id), `Location` (where a broken run stream is joined again), `X-Pagination-Total` and `X-Pagination-Next`
 * (search pages). With it: its `allow_origins` (or `allow_origin_regex`), methods, headers, credentials and max age;
 * those exposed headers are always added to its `expose_headers`.
 */
const ALWAYS_EXPOSED = ['content-location', 'location', 'x-pagination-total', 'x-pagination-next'];

export function corsMiddleware(config: CorsConfig | null): MiddlewareHandler {
  if (config === null) return cors({ origin: '*', exposeHeaders: ALWAYS_EXPOSED });
  const regex = config.allow_origin_regex ? new RegExp(config.allow_origin_regex) : null;
  const exposed = [...(config.expose_headers ?? [])];
  for (const h of ALWAYS_EXPOSED) if (!exposed.some((e) => e.toLowerCase() === h)) exposed.push(h);
  return cors({
    origin: regex
      ? (origin) => ((regex.lastIndex = 0), regex.test(origin) ? origin : null)
      : [...(config.allow_origins ?? [])],
    ...(config.allow_methods ? { allowMethods: [...config.allow_methods] } : {}),
    ...(config.allow_headers ? { allowHeaders: [...config.allow_headers] } : {}),
    ...(config.allow_credentials !== undefined ? { credentials: config.allow_credentials } : {}),
    ...(config.max_age !== undefined ? { maxAge: config.max_age } : {}),
    exposeHeaders: exposed,
  });
}
