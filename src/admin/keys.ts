import { Hono, type MiddlewareHandler } from 'hono';
import { badRequest, errorResponse, keyManagementOff, keyNotFound, workspaceConflict } from '../errors.ts';
import { KeyRegistryError, type ApiKeyRecord, type KeyRegistry } from '../keys/types.ts';
import { operatorOnly } from './operator-only.ts';

/**
 * `/keys` on the admin listener: the API keys of the key registry the gateway's services use, on any store (the
 * memory registry lives only inside the running gateway, so this is the one way to it), for `gateway keys`.
 *
 *   GET    /keys[?org=]  {"keys": [{id, org, created_at}]}: ids only, never a key or its hash
 *   POST   /keys         {"org", "workspace"} → 201 {key, id, org, workspace, created_at}: the key, shown once
 *   DELETE /keys/{id}    → 200 {id, org, created_at, revoked: true}; 404 when no key has that id
 *
 * Every request needs `authorization: Bearer <ADMIN_TOKEN>`: a key is a tenant's credential, and tenants' code runs
 * on the same loopback. Without ADMIN_TOKEN the routes answer 403 saying so; without a registry of this gateway's own
 * (CONTROL_PLANE_URL points elsewhere), 403 saying where keys are managed.
 */
export interface KeysAdminOptions {
  readonly registry: KeyRegistry | null;
  readonly token: string | null;
}

export function keysAdmin({ registry, token }: KeysAdminOptions): Hono {
  const app = new Hono();
  app.use('*', operatorOnly(token), registryHere(registry));
  const reg = () => registry!;

  app.get('/', async (c) => {
    const org = c.req.query('org');
    return c.json({ keys: (await reg().listKeys(org || undefined)).map(shown) });
  });
  app.post('/', async (c) => {
    const body = (await c.req.json().catch(() => null)) as { org?: unknown; workspace?: unknown } | null;
    const { org, workspace } = body ?? {};
    if (typeof org !== 'string' || typeof workspace !== 'string' || org === '' || workspace === '')
      return errorResponse(badRequest('Body must be JSON {"org": "<organisation>", "workspace": "<workspace>"}'));
    try {
      await reg().addWorkspace(org, workspace);
      const { key, record } = await reg().createKey(org);
      return c.json({ key, ...shown(record), workspace }, 201);
    } catch (err) {
      if (!(err instanceof KeyRegistryError)) throw err;
      return errorResponse(err.code === 'workspace_taken' ? workspaceConflict(err.message) : badRequest(err.message));
    }
  });
  app.delete('/:id', async (c) => {
    const id = c.req.param('id');
    const revoked = await reg().revokeKey(id);
    if (revoked === null) return errorResponse(keyNotFound(id));
    return c.json({ ...shown(revoked), revoked: true });
  });
  return app;
}

/** A key as listed: its id, organisation and creation time. */
function shown(r: ApiKeyRecord) {
  return { id: r.id, org: r.org, created_at: r.createdAt };
}

/** After the operator's token (operator-only.ts): a registry to manage. */
function registryHere(registry: KeyRegistry | null): MiddlewareHandler {
  return async function registryHere(_c, next) {
    if (registry === null)
      return errorResponse(
        keyManagementOff(
          'This gateway uses a control plane elsewhere (CONTROL_PLANE_URL): manage keys where it runs, or with REDIS_URL straight in the registry',
        ),
      );
    await next();
  };
}
