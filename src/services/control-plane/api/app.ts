import { Hono, type Context } from 'hono';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { KeyRegistry } from '../../../keys/types.ts';
import { authenticate, type ControlPlaneEnv } from './auth.ts';
import { ApiError, StoreUnavailable } from '../errors.ts';
import { apiErrorResponse, jsonBodyLimit, notFoundJson, serviceErrorHandler } from '../../shared/http-errors.ts';
import { checked, readJsonBody } from '../../shared/json-body.ts';
import { isRedisError } from '../store/redis-store.ts';
import { createBody, listDeploymentsQuery, listRevisionsQuery, patchBody } from './schemas.ts';
import type { DeploymentService } from '../service.ts';
import type { DeploymentLogs } from '../serving/runtime-logs.ts';
import { logRoutes } from './log-routes.ts';

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
  /** Deepest nesting of a JSON body (MAX_JSON_DEPTH); default 64. Deeper answers 422 `json_too_deep`. */
  readonly maxJsonDepth?: number;
  /** Each deployment's own output (`/deployments/{id}/logs`); absent: none is kept (records only). */
  readonly logs?: DeploymentLogs | null;
  /** How often a followed build log reads the store (log-routes.ts). */
  readonly buildLogPollMs?: number;
}

export const API_PREFIXES = ['/v2', '/api-host/v2'] as const;
/** Query parameters that may be repeated or comma-separated lists. */
const LIST_PARAMS = new Set(['status', 'deployment_type', 'deployment_ids']);

export function controlPlaneApp({
  service,
  keys,
  log,
  maxBodyBytes = 1024 * 1024,
  maxJsonDepth,
  logs,
  buildLogPollMs,
}: ControlPlaneDeps): Hono<ControlPlaneEnv> {
  const api = new Hono<ControlPlaneEnv>();
  api.use('*', authenticate(keys));
  api.use('*', jsonBodyLimit(maxBodyBytes));

  api.post('/deployments', async (c) =>
    c.json(await service.create(c.get('tenantId'), await readJsonBody(c, createBody, 'required', maxJsonDepth)), 201),
  );
  api.get('/deployments', async (c) => c.json(await service.list(c.get('tenantId'), query(c, listDeploymentsQuery))));
  api.get('/deployments/:id', async (c) => c.json(await service.get(c.get('tenantId'), c.req.param('id'))));
  api.patch('/deployments/:id', async (c) =>
    c.json(
      await service.patch(
        c.get('tenantId'),
        c.req.param('id'),
        await readJsonBody(c, patchBody, 'required', maxJsonDepth),
      ),
    ),
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
  api.post('/deployments/:id/revisions/:revisionId/redeploy', async (c) =>
    c.json(await service.redeploy(c.get('tenantId'), c.req.param('id'), c.req.param('revisionId'))),
  );
  logRoutes(api, { service, logs: logs ?? null, log, buildLogPollMs });
  // Known paths, other methods: 405 with the methods that work.
  notAllowed(api, '/deployments', 'GET, POST');
  notAllowed(api, '/deployments/:id', 'GET, PATCH, DELETE');
  notAllowed(api, '/deployments/:id/revisions', 'GET');
  notAllowed(api, '/deployments/:id/revisions/:revisionId', 'GET');
  notAllowed(api, '/deployments/:id/revisions/:revisionId/redeploy', 'POST');
  notAllowed(api, '/deployments/:id/revisions/:revisionId/build_log', 'GET');
  notAllowed(api, '/deployments/:id/logs', 'GET');

  const app = new Hono<ControlPlaneEnv>();
  for (const prefix of API_PREFIXES) app.route(prefix, api);
  const onError = serviceErrorHandler(log, 'control plane', storeDown(log));
  api.onError(onError);
  app.onError(onError);
  api.notFound(notFoundJson);
  app.notFound(notFoundJson);
  return app;
}

function notAllowed(api: Hono<ControlPlaneEnv>, path: string, allow: string): void {
  api.all(path, (c) => apiErrorResponse(c, new ApiError(405, 'Method Not Allowed', { Allow: allow })));
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
  return checked(schema, raw, 'query');
}

/** A store that is down answers 503: the client may retry. */
function storeDown(log: Logger) {
  return (err: Error): ApiError | null => {
    if (!(err instanceof StoreUnavailable || isRedisError(err))) return null;
    log.error({ err: err.message }, 'control plane store unavailable');
    return new ApiError(503, 'Store unavailable; retry later.');
  };
}
