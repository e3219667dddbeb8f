import { timingSafeEqual, createHash } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import type { Logger } from 'pino';
import type { KeyRegistry } from '../../../keys/types.ts';
import { allowAll, authorizer, type Authorize } from './filters.ts';
import { httpStatusOf, studioUser, toUser, type AuthHandlers } from './custom-handlers.ts';
import { ApiError, unauthorized } from '../errors.ts';
import type { AuthUser } from './user.ts';

/**
 * Who is calling. Without a custom handler, `x-api-key` must be a key of
 * the organisation owning the deployment; the user is then that owner
 * (requests are not scoped to end users). With a custom handler, it
 * authenticates every request (except the public paths) and its result is
 * the user; a request of the design studio (`x-auth-scheme: langsmith`
 * with a valid API key) is the studio user instead, still subject to the
 * authorization handlers. Credentials never reach the user object or a log.
 */
export interface KeyOwner {
  readonly org: string;
  readonly workspace?: string;
}

/** Checks an API key: its owner, or null when the key is unknown. */
export type ApiKeyVerifier = (key: string) => Promise<KeyOwner | null>;

export interface RequestAuth {
  readonly user: AuthUser;
  readonly authorize: Authorize;
}

export type AgentEnv = { Variables: { auth: RequestAuth } };

export interface AuthOptions {
  readonly handlers: AuthHandlers | null;
  readonly verifyApiKey: ApiKeyVerifier;
  /** When set, only keys of this organisation are accepted. */
  readonly org?: string | undefined;
  readonly log: Logger;
  /** `auth.disable_studio_auth` of langgraph.json: no studio user; every request goes through the handler. */
  readonly disableStudioAuth?: boolean;
}

export function authenticate({
  handlers,
  verifyApiKey,
  org,
  log,
  disableStudioAuth = false,
}: AuthOptions): MiddlewareHandler<AgentEnv> {
  const authorizeFor = (user: AuthUser): Authorize =>
    handlers && Object.keys(handlers.callbacks).length > 0 ? authorizer(handlers.callbacks, user, log) : allowAll;

  const keyOwner = async (key: string | undefined): Promise<KeyOwner> => {
    if (key === undefined || key === '') throw unauthorized('Missing X-Api-Key header: send a valid API key.');
    const owner = await verifyApiKey(key);
    if (owner === null || (org !== undefined && owner.org !== org)) throw unauthorized('Invalid API key.');
    return owner;
  };

  const custom = async (request: Request): Promise<AuthUser> => {
    let result: unknown;
    try {
      result = await handlers!.authenticate!(request);
    } catch (err) {
      const http = httpStatusOf(err);
      if (http !== null) throw new ApiError(http.status, http.message, http.headers);
      // The error's type only: its message and stack may quote the credential being checked.
      log.error(
        { err: { type: err instanceof Error ? err.name : typeof err } },
        'custom authentication handler failed',
      );
      throw new ApiError(500, 'Authentication handler failed.');
    }
    const user = toUser(result);
    if (user === null) {
      log.error('custom authentication handler returned no identity');
      throw new ApiError(500, 'Authentication handler returned no identity.');
    }
    return user;
  };

  return async function authenticate(c, next) {
    // Once per request: the custom routes' middleware (custom-routes.ts) may have authenticated it already.
    if (c.get('auth') !== undefined) return next();
    const key = c.req.header('x-api-key')?.trim();
    let user: AuthUser;
    const studio = !disableStudioAuth && c.req.header('x-auth-scheme')?.toLowerCase() === 'langsmith';
    if (handlers?.authenticate && !studio) {
      // Headers, method and URL only: the body stays for the route.
      user = await custom(new Request(c.req.url, { method: c.req.method, headers: c.req.raw.headers }));
    } else if (handlers?.authenticate) {
      await keyOwner(key);
      user = studioUser();
    } else {
      const owner = await keyOwner(key);
      user = {
        identity: owner.org,
        display_name: owner.org,
        is_authenticated: true,
        permissions: [],
        kind: 'api_key',
        org: owner.org,
        ...(owner.workspace !== undefined ? { workspace: owner.workspace } : {}),
      };
    }
    c.set('auth', { user, authorize: authorizeFor(user) });
    await next();
  };
}

/** A verifier over a fixed list of keys (development, or a deployment run alone), all of organisation `org`. */
export function fixedKeyVerifier(keys: readonly string[], org = 'dev'): ApiKeyVerifier {
  const digests = keys.map(digest);
  return async (key) => {
    const d = digest(key);
    return digests.some((k) => timingSafeEqual(k, d)) ? { org } : null;
  };
}

/** A verifier over the control plane's key registry. */
export function registryKeyVerifier(registry: Pick<KeyRegistry, 'findKey'>): ApiKeyVerifier {
  return async (key) => {
    const record = await registry.findKey(key);
    return record === null ? null : { org: record.org };
  };
}

function digest(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}
