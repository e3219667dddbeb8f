import { Hono, type Context } from 'hono';
import type { Logger } from 'pino';
import { badRequest, errorResponse } from '../errors.ts';
import { withinTenant } from '../edge/tenant-scope.ts';
import { operatorOnly } from './operator-only.ts';
import { bucketKey, type KeyScheme } from '../limiter/bucket-key.ts';
import type { Bucket, BucketAdmin } from '../limiter/types.ts';
import { overridden, type LiveOverrides } from '../limiter/overrides.ts';
import type { Matcher } from '../rules/compile.ts';
import { IDENTITIES, ipIdentity, type IdentityKind } from '../rules/identity.ts';
import type { Limit } from '../rules/types.ts';

/**
 * One identity's bucket, for an operator (issue 29, item 5), on the admin listener under `/limits`:
 *
 *   GET    /limits/buckets?policy=<rule>.<by>|guard.<id>&<identity>   its state now
 *   DELETE /limits/buckets?policy=...&<identity>                       reset it (full again; no slot held)
 *
 * The identity is given in clear as the edge reads it (`api_key=`, `user=` and `ip=`, or `ip=`; an IPv6 address is
 * reduced to its prefix as the edge does) or already digested (`digest=`, as it appears in the store key). Both are
 * audited in the log with the store key (a digest, never the identity in clear). With `org=<organisation>`, read with
 * that organisation's override of the limit (plans per organisation: same bucket, other numbers). Only with the operator token
 * (ADMIN_TOKEN, `authorization: Bearer <token>`): without one configured, these answer 401 and say so.
 */
export interface LimitsAdminOptions {
  readonly token: string | null;
  readonly matcher: () => Matcher;
  readonly store: BucketAdmin;
  readonly scheme: KeyScheme;
  readonly ipv6PrefixBits: number;
  readonly log: Logger;
  /** Plans per organisation: with `org=`, the bucket is read with that organisation's numbers. */
  readonly overrides?: LiveOverrides;
}

export function limitsAdmin(o: LimitsAdminOptions): Hono {
  const app = new Hono();
  app.use('*', operatorOnly(o.token));
  app.get('/buckets', async (c) => {
    const found = target(c, o);
    if (found instanceof Response) return found;
    const state = await o.store.peek(found.bucket);
    o.log.info({ audit: 'bucket-read', policy: found.limit.policy, key: found.bucket.key }, 'operator read a bucket');
    return c.json({ ...describe(found.limit, found.bucket), ...state });
  });
  app.delete('/buckets', async (c) => {
    const found = target(c, o);
    if (found instanceof Response) return found;
    await o.store.reset(found.bucket);
    o.log.warn({ audit: 'bucket-reset', policy: found.limit.policy, key: found.bucket.key }, 'operator reset a bucket');
    return c.json({ ...describe(found.limit, found.bucket), reset: true });
  });
  return app;
}

function describe(l: Limit, b: Bucket) {
  return {
    policy: l.policy,
    by: l.by,
    key: b.key,
    ...(l.until === null ? { count: l.count, per_seconds: l.perSeconds } : { concurrent: l.count, until: l.until }),
  };
}

/** The limit the query names and the bucket of its identity; a 400 saying what to fix otherwise. */
function target(c: Context, o: LimitsAdminOptions): { limit: Limit; bucket: Bucket } | Response {
  const policy = c.req.query('policy');
  if (!policy) return errorResponse(badRequest('Give policy=<rule>.<by> or policy=guard.<id>'));
  const m = o.matcher();
  const named = [...m.rules.flatMap((r) => r.limits), ...m.guards.map((g) => g.limit)].find((l) => l.policy === policy);
  if (named === undefined) return errorResponse(badRequest(`No limit of the rules in force is named "${policy}"`));
  const org = c.req.query('org');
  const plan = org ? o.overrides?.of(org)?.[policy] : undefined;
  const limit = plan === undefined ? named : overridden(named, plan);
  const key = keyOf(c, o, limit);
  if (key instanceof Response) return key;
  return {
    limit,
    bucket: { key, capacity: limit.count, perSeconds: limit.perSeconds, inFlight: limit.until !== null },
  };
}

const DIGEST = /^[A-Za-z0-9_-]{22}$/;

function keyOf(c: Context, o: LimitsAdminOptions, limit: Limit): string | Response {
  const digest = c.req.query('digest');
  if (digest !== undefined) {
    if (!DIGEST.test(digest)) return errorResponse(badRequest('digest must be the 22 characters of a store key'));
    return `${o.scheme.prefix}:${o.scheme.region}:${limit.scope}:${limit.by}:${digest}`;
  }
  const identity = clearIdentity(c, limit.by, o.ipv6PrefixBits);
  if (identity === null) {
    const wanted = limit.by === 'api-key' ? 'api_key=' : limit.by === 'user-ip' ? 'user= and ip=' : 'ip=';
    return errorResponse(badRequest(`Give the identity: ${wanted} (in clear), or digest=`));
  }
  // User-id buckets and address-counted slots are kept per deployment (edge/tenant-scope.ts): `deployment=` names it.
  return bucketKey(o.scheme, limit.scope, limit.by, withinTenant(identity, c.req.query('deployment'), limit));
}

function clearIdentity(c: Context, by: IdentityKind, ipv6PrefixBits: number): string | null {
  const ip = c.req.query('ip');
  const reduced = ip ? ipIdentity(ip, ipv6PrefixBits) : '';
  if (by === 'api-key') {
    const key = c.req.query('api_key');
    return key ? IDENTITIES[by].form(key) : null;
  }
  if (by === 'user-ip') {
    const user = c.req.query('user');
    return user && ip ? IDENTITIES[by].form(user, reduced) : null;
  }
  return ip ? IDENTITIES.ip.form('', reduced) : null;
}
