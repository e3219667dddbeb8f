import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { ownValue } from '../../shared/own-value.ts';
import { httpStatusOf, type AuthorizationHandler } from './custom-handlers.ts';
import { ApiError, forbidden } from '../errors.ts';
import type { Json } from '../store/records.ts';
import type { AuthUser } from './user.ts';

/**
 * Authorization handlers of a custom auth app. For an event
 * `resource:action` the first handler found among `resource:action`,
 * `resource`, `*:action`, `*` runs with `{event, resource, action, value,
 * user, permissions}`. It may write into `value.metadata` (e.g. `owner`),
 * and returns nothing or `true` (allow), `false` (403), or a filter over
 * the resource's metadata: `{k: v}`, `{k: {$eq: v}}`, `{k: {$contains: v}}`,
 * all keys ANDed. A single read the filter excludes answers 404; a search
 * leaves the item out. Without handlers everything is allowed.
 */
export type Resource = 'assistants' | 'threads' | 'crons' | 'store';
export type Action =
  'create' | 'read' | 'update' | 'delete' | 'search' | 'create_run' | 'put' | 'get' | 'list_namespaces';
export type Filter = Readonly<Record<string, unknown>>;

/** Runs the handler for `resource:action` on `value` (which it may change); the filter, or null for none. */
export type Authorize = (resource: Resource, action: Action, value: Record<string, unknown>) => Promise<Filter | null>;

export function authorizer(
  callbacks: Readonly<Record<string, AuthorizationHandler>>,
  user: AuthUser,
  log?: Logger,
): Authorize {
  return async function authorize(resource, action, value) {
    const key = [`${resource}:${action}`, resource, `*:${action}`, '*'].find((k) => callbacks[k] !== undefined);
    if (key === undefined) return null;
    let result: unknown;
    try {
      result = await callbacks[key]!({
        event: `${resource}:${action}`,
        resource,
        action,
        value,
        user,
        permissions: user.permissions,
      });
    } catch (err) {
      // The documented way to refuse: `throw new HTTPException(403, {message})` answers that status and message.
      const http = httpStatusOf(err);
      if (http !== null) throw new ApiError(http.status, http.message || 'Forbidden', http.headers);
      // Anything else is the handler's bug: logged with its name (type and message, never the value it was given),
      // answered 500 with a plain message.
      log?.error(
        {
          handler: key,
          event: `${resource}:${action}`,
          error: { type: (err as Error)?.name ?? typeof err, message: (err as Error)?.message },
        },
        'authorization handler failed',
      );
      throw new ApiError(500, `The authorization handler "${key}" failed.`);
    }
    if (result === undefined || result === null || result === true) return null;
    if (result === false) throw forbidden(`Not allowed to ${action.replace('_', ' ')} ${resource}`);
    if (typeof result !== 'object' || Array.isArray(result)) {
      throw new ApiError(
        500,
        `The authorization handler of ${resource}:${action} returned neither a boolean nor a filter object`,
      );
    }
    checkFilter(result as Filter, `${resource}:${action}`);
    return Object.keys(result).length === 0 ? null : (result as Filter);
  };
}

/** Allows everything: no custom auth, or a handler without authorization callbacks. */
export const allowAll: Authorize = async () => null;

/** True when `metadata` passes every condition of `filter` (null: no filter). */
export function matchesFilter(metadata: Json | null | undefined, filter: Filter | null): boolean {
  if (filter === null) return true;
  for (const [key, condition] of Object.entries(filter)) {
    const actual = ownValue(metadata, key);
    if (isOperator(condition)) {
      if ('$eq' in condition && !isDeepStrictEqual(actual, condition.$eq)) return false;
      if ('$contains' in condition && !contains(actual, condition.$contains)) return false;
    } else if (!isDeepStrictEqual(actual, condition)) return false;
  }
  return true;
}

/** `$contains`: an array holding the value (or every value of a list), or a string holding the substring. */
function contains(actual: unknown, wanted: unknown): boolean {
  if (typeof actual === 'string') return typeof wanted === 'string' && actual.includes(wanted);
  if (!Array.isArray(actual)) return false;
  const all = Array.isArray(wanted) ? wanted : [wanted];
  return all.every((w) => actual.some((a) => isDeepStrictEqual(a, w)));
}

function isOperator(v: unknown): v is { $eq?: unknown; $contains?: unknown } {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).some((k) => k.startsWith('$'));
}

function checkFilter(filter: Filter, event: string): void {
  for (const [key, condition] of Object.entries(filter)) {
    if (!isOperator(condition)) continue;
    const unknown = Object.keys(condition).filter((op) => op !== '$eq' && op !== '$contains');
    if (unknown.length > 0)
      throw new ApiError(
        500,
        `The authorization handler of ${event} filters "${key}" with unsupported operator ${unknown.join(', ')} (supported: $eq, $contains)`,
      );
  }
}
