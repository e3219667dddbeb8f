import { AppConfigError } from '../app-config.ts';
import type { AuthUser } from './user.ts';

/**
 * A custom auth handler as the app exports it, normalised. The public JS
 * API (`new Auth().authenticate(fn).on(event, fn)` from
 * `@langchain/langgraph-sdk/auth`) keeps its handlers in `~handlerCache`;
 * that is read here, so existing apps' auth files work unchanged. A bare
 * function is taken as the authenticate handler.
 */
export type AuthenticateHandler = (request: Request) => unknown;

export interface AuthorizationArgs {
  readonly event: string;
  readonly resource: string;
  readonly action: string;
  readonly value: Record<string, unknown>;
  readonly user: AuthUser;
  readonly permissions: readonly string[];
}

export type AuthorizationHandler = (args: AuthorizationArgs) => unknown;

export interface AuthHandlers {
  readonly authenticate: AuthenticateHandler | null;
  /** Keyed `resource:action`, `resource`, `*:action` or `*`. */
  readonly callbacks: Readonly<Record<string, AuthorizationHandler>>;
}

export function authHandlers(value: unknown, where: string): AuthHandlers {
  if (typeof value === 'function') return { authenticate: value as AuthenticateHandler, callbacks: {} };
  const cache =
    typeof value === 'object' && value !== null ? (value as Record<string, unknown>)['~handlerCache'] : undefined;
  if (typeof cache !== 'object' || cache === null) {
    throw new AppConfigError(
      `${where}: expected an Auth object (new Auth() from @langchain/langgraph-sdk/auth) or an authenticate function`,
    );
  }
  const { authenticate, callbacks } = cache as { authenticate?: unknown; callbacks?: unknown };
  if (authenticate !== undefined && typeof authenticate !== 'function')
    throw new AppConfigError(`${where}: authenticate must be a function`);
  const handlers: Record<string, AuthorizationHandler> = {};
  for (const [event, fn] of Object.entries((callbacks ?? {}) as Record<string, unknown>)) {
    if (typeof fn !== 'function') throw new AppConfigError(`${where}: the handler of "${event}" must be a function`);
    handlers[event] = fn as AuthorizationHandler;
  }
  return { authenticate: (authenticate as AuthenticateHandler | undefined) ?? null, callbacks: handlers };
}

/**
 * What an authenticate handler returned, as the user object: a string is
 * the identity; an object needs a non-empty string `identity` and keeps its
 * other fields. Null when the result is neither.
 */
export function toUser(result: unknown): AuthUser | null {
  const fields: Record<string, unknown> | null =
    typeof result === 'string'
      ? { identity: result }
      : typeof result === 'object' && result !== null && !Array.isArray(result)
        ? { ...result }
        : null;
  if (fields === null || typeof fields.identity !== 'string' || fields.identity === '') return null;
  return {
    ...fields,
    identity: fields.identity,
    display_name: typeof fields.display_name === 'string' ? fields.display_name : fields.identity,
    is_authenticated: typeof fields.is_authenticated === 'boolean' ? fields.is_authenticated : true,
    permissions: Array.isArray(fields.permissions)
      ? fields.permissions.filter((p): p is string => typeof p === 'string')
      : [],
  };
}

/** An `HTTPException` of any library (the SDK's, Hono's): an Error with a numeric HTTP status. */
export function httpStatusOf(
  err: unknown,
): { status: number; message: string; headers: Record<string, string> } | null {
  if (!(err instanceof Error)) return null;
  const { status, headers } = err as Error & { status?: unknown; headers?: unknown };
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 400 || status > 599) return null;
  const plain: Record<string, string> = {};
  if (headers instanceof Headers) headers.forEach((v, k) => (plain[k] = v));
  else if (typeof headers === 'object' && headers !== null) {
    for (const [k, v] of Object.entries(headers)) if (typeof v === 'string') plain[k] = v;
  }
  return { status, message: err.message, headers: plain };
}

/** The user the design studio acts as (the public `isStudioUser` recognises it). */
export function studioUser(): AuthUser {
  return {
    identity: 'langgraph-studio-user',
    display_name: 'langgraph-studio-user',
    is_authenticated: true,
    permissions: [],
    kind: 'StudioUser',
  };
}

/** True for the design studio's user, as `isStudioUser` of @langchain/langgraph-sdk/auth decides. */
export function isStudioUser(user: { identity: string; kind?: unknown }): boolean {
  return user.kind === 'StudioUser' || user.identity === 'langgraph-studio-user';
}
