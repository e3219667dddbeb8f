import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { KeyRegistry } from '../../keys/types.ts';
import { authenticate, type ControlPlaneEnv } from './auth.ts';
import { ApiError, invalid, StoreUnavailable } from './errors.ts';
import { isRedisError } from './redis-store.ts';
import { createBody, listDeploymentsQuery, listRevisionsQuery, patchBody, validationIssues } from './schemas.ts';
import type { DeploymentService } from './service.ts';

/**
 * The control plane API as a Hono app, served under `/v2` and under its
 * self-hosted form `/api-host/v2` (same handlers). It runs alone (its own
 * listener) or behind the edge, which forwards both prefixes to it.
 */
export interface ControlPlaneDeps {
  readonly service: DeploymentService;
  readonly keys: KeyRegistry;
  readonly log: Logger;
  /** Largest request body, bytes (the edge has its own MAX_BODY in front). */
  readonly maxBodyBytes?: number;
}

export const API_PREFIXES = ['/v2', '/api-host/v2'] as const;
/** Query parameters that may be repeated or comma-separated lists. */
const LIST_PARAMS = new Set(['status', 'deployment_type', 'deployment_ids']);

export function controlPlaneApp({
  service,
  keys,
  log,
  maxBodyBytes = 1024 * 1024,
}: ControlPlaneDeps): Hono<ControlPlaneEnv> {
  const api = new Hono<ControlPlaneEnv>();
  api.use('*', authenticate(keys));
  api.use(
    '*',
    bodyLimit({
      maxSize: maxBodyBytes,
      onError: (c) => c.json({ detail: `Request body larger than ${maxBodyBytes} bytes.` }, 413),
    }),
  );

  api.post('/deployments', async (c) =>
    c.json(await service.create(c.get('tenantId'), await body(c, createBody)), 201),
  );
  api.get('/deployments', async (c) => c.json(await service.list(c.get('tenantId'), query(c, listDeploymentsQuery))));
  api.get('/deployments/:id', async (c) => c.json(await service.get(c.get('tenantId'), c.req.param('id'))));
  api.patch('/deployments/:id', async (c) =>
    c.json(await service.patch(c.get('tenantId'), c.req.param('id'), await body(c, patchBody))),
  );
  api.delete('/deployments/:id', async (c) => {
    await service.remove(c.get('tenantId'), c.req.param('id'));
    return c.body(null, 204);
  });
  api.get('/deployments/:id/revisions', async (c) =>
    c.json(await service.listRevisions(c.get('tenantId'), c.req.param('id'), query(c, listRevisionsQuery))),
  );
  api.get('/deployments/:id/revisions/:revisionId', async (c) =>
    c.json(await service.getRevision(c.get('tenantId'), c.req.param('id'), c.req.param('revisionId'))),
  );
  // Known paths, other methods: 405 with the methods that work.
  notAllowed(api, '/deployments', 'GET, POST');
  notAllowed(api, '/deployments/:id', 'GET, PATCH, DELETE');
  notAllowed(api, '/deployments/:id/revisions', 'GET');
  notAllowed(api, '/deployments/:id/revisions/:revisionId', 'GET');

  const app = new Hono<ControlPlaneEnv>();
  for (const prefix of API_PREFIXES) app.route(prefix, api);
  const onError = errorHandler(log);
  api.onError(onError);
  app.onError(onError);
  api.notFound((c) => c.json({ detail: 'Not Found' }, 404));
  app.notFound((c) => c.json({ detail: 'Not Found' }, 404));
  return app;
}

function notAllowed(api: Hono<ControlPlaneEnv>, path: string, allow: string): void {
  api.all(path, (c) => {
    c.header('Allow', allow);
    return c.json({ detail: 'Method Not Allowed' }, 405);
  });
}

/** The JSON body checked against `schema`: not JSON, absent or invalid → 422 in the public shape. */
async function body<S extends z.ZodType>(c: Context<ControlPlaneEnv>, schema: S): Promise<z.infer<S>> {
  const text = await c.req.text();
  if (text.trim() === '') throw invalid({ loc: ['body'], msg: 'Field required', type: 'missing' });
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the input, which may hold secret values: never echoed.
    throw invalid({ loc: ['body'], msg: 'Request body is not valid JSON.', type: 'json_invalid' });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new ApiError(422, validationIssues(parsed.error, 'body', json));
  return parsed.data;
}

function query<S extends z.ZodType>(c: Context<ControlPlaneEnv>, schema: S): z.infer<S> {
  const raw: Record<string, string | string[]> = {};
  for (const [name, values] of Object.entries(c.req.queries())) {
    raw[name] = LIST_PARAMS.has(name)
      ? values
          .flatMap((v) => v.split(','))
          .map((v) => v.trim())
          .filter((v) => v !== '')
      : values[values.length - 1]!;
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new ApiError(422, validationIssues(parsed.error, 'query', raw));
  return parsed.data;
}

/** Every error leaves as JSON `{"detail": ...}`; a stack trace only ever reaches the log. */
function errorHandler(log: Logger) {
  return function onError(err: Error, c: Context<ControlPlaneEnv>): Response {
    if (err instanceof ApiError) return c.json(err.toJSON(), err.status);
    if (err instanceof HTTPException) return c.json({ detail: err.message || 'Bad request' }, err.status);
    if (err instanceof StoreUnavailable || isRedisError(err)) {
      log.error({ err: err.message }, 'control plane store unavailable');
      return c.json({ detail: 'Store unavailable; retry later.' }, 503);
    }
    log.error(
      { err: { type: err.name, message: err.message, stack: err.stack }, path: c.req.path, method: c.req.method },
      'control plane failure',
    );
    return c.json({ detail: 'Internal server error.' }, 500);
  };
}
