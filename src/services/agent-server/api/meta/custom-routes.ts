import type { Hono, MiddlewareHandler } from 'hono';
import { GraphLoadError, importExport, type ModuleRef } from '../../app-config.ts';
import type { AgentEnv } from '../../auth/authenticate.ts';
import type { Operation } from '../operations.ts';

/**
 * Custom routes: `http.app` of langgraph.json names a Hono app of the user (`<file>:<export>`, default export when no
 * export is named). It is mounted as the official JS server mounts it: after authentication (the same as the API's:
 * the app's auth handler, or an API key) and before the API routes, so its routes answer first and its middleware
 * (`app.use(...)`) runs before every API route. Only the public paths (/ok, /info, /docs, /openapi.json, the UI bundles' files) skip
 * authentication; a route of the user app is never public.
 */
export interface RoutableApp {
  readonly routes: readonly unknown[];
  fetch(request: Request, ...rest: unknown[]): Response | Promise<Response>;
}

export async function loadHttpApp(ref: ModuleRef, configFile: string): Promise<RoutableApp> {
  const value = await importExport(ref, `${configFile}: http.app`);
  const app = value as Partial<RoutableApp> | null;
  if (typeof app !== 'object' || app === null || !Array.isArray(app.routes) || typeof app.fetch !== 'function')
    throw new GraphLoadError('http.app', `${ref.spec} is not a Hono app (new Hono() from "hono")`);
  return app as RoutableApp;
}

/**
 * Whether `METHOD path` is an operation served without authentication (a `{param}` of its path matches one segment:
 * `GET /ui/{agent}/{basename}`).
 */
export function publicPathTest(ops: readonly Operation[]): (method: string, path: string) => boolean {
  const patterns = ops
    .filter((op) => op.public)
    .map((op) => {
      const path = op.path.split(/\{[^}]+\}/).map((part) => part.replace(/[.*+?^$()|[\]\\]/g, '\\$&'));
      return new RegExp(`^${op.method.toUpperCase()} ${path.join('[^/]+')}$`);
    });
  return (method, path) => patterns.some((p) => p.test(`${method} ${path}`));
}

export function mountHttpApp(
  app: Hono<AgentEnv>,
  user: RoutableApp,
  auth: MiddlewareHandler<AgentEnv>,
  isPublic: (method: string, path: string) => boolean,
): void {
  app.use('*', async (c, next) => {
    const method = c.req.method === 'HEAD' ? 'GET' : c.req.method;
    if (isPublic(method, c.req.path)) return next();
    return auth(c, next);
  });
  app.route('/', user as unknown as Hono<AgentEnv>);
}
