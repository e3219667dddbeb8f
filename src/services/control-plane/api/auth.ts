import type { MiddlewareHandler } from 'hono';
import type { KeyRegistry } from '../../../keys/types.ts';
import { ApiError } from '../errors.ts';

export type ControlPlaneEnv = { Variables: { tenantId: string; keyId: string; org: string } };

/**
 * Every control plane request names a key and a workspace: `X-Api-Key`
 * missing or unknown → 401; `X-Tenant-Id` missing → 400; a workspace that is
 * not of the key's organisation (or does not exist: the answer must not
 * tell which) → 403. A deployment of another workspace then answers 404.
 */
export function authenticate(keys: KeyRegistry): MiddlewareHandler<ControlPlaneEnv> {
  return async function authenticate(c, next) {
    const key = c.req.header('x-api-key')?.trim();
    if (!key) throw new ApiError(401, 'Missing X-Api-Key header: send a valid API key.');
    const record = await keys.findKey(key);
    if (record === null) throw new ApiError(401, 'Invalid API key.');
    const tenantId = c.req.header('x-tenant-id')?.trim();
    if (!tenantId) throw new ApiError(400, 'Missing X-Tenant-Id header: send the ID of the workspace to target.');
    if ((await keys.workspaceOrg(tenantId)) !== record.org) {
      throw new ApiError(403, "X-Tenant-Id names a workspace outside this API key's organisation.");
    }
    c.set('tenantId', tenantId);
    c.set('keyId', record.id);
    c.set('org', record.org);
    await next();
  };
}
