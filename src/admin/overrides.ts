import { Hono } from 'hono';
import type { Logger } from 'pino';
import { badRequest, errorResponse } from '../errors.ts';
import type { LiveOverrides, OrgOverrides, Override } from '../limiter/overrides.ts';
import type { Matcher } from '../rules/compile.ts';
import { parseDuration } from '../rules/duration.ts';
import type { Limit } from '../rules/types.ts';
import { operatorOnly } from './operator-only.ts';

/**
 * Plans per organisation (issue 29, item 4), on the admin listener with the operator token:
 *
 *   GET    /limits/overrides                 every organisation's overrides
 *   GET    /limits/overrides/<org>           one organisation's
 *   PUT    /limits/overrides/<org>           {"policy": "<rule>.<by>"|"guard.<id>", "count": N, "per": "1m"} (a rate
 *                                            limit; per optional, else the rule's) or {"policy": ..., "concurrent": N}
 *   DELETE /limits/overrides/<org>[?policy=] one override, or all of the organisation's
 *
 * Changes are audited in the log and reach every edge sharing the store within a poll (overrides.ts).
 */
export interface OverridesAdminOptions {
  readonly token: string | null;
  readonly matcher: () => Matcher;
  readonly overrides: LiveOverrides;
  readonly log: Logger;
}

/** An organisation's name as the key registry allows it. */
const ORG = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const MAX_COUNT = 1_000_000_000;

export function overridesAdmin(o: OverridesAdminOptions): Hono {
  const app = new Hono();
  app.use('*', operatorOnly(o.token));
  app.get('/', async (c) => c.json({ overrides: Object.fromEntries(shown(await o.overrides.store.read())) }));
  app.get('/:org', async (c) => {
    const org = c.req.param('org');
    return c.json({ org, overrides: shownOne((await o.overrides.store.read()).get(org) ?? {}) });
  });
  app.put('/:org', async (c) => {
    const org = c.req.param('org');
    if (!ORG.test(org)) return errorResponse(badRequest(`Invalid organisation "${org.slice(0, 64)}"`));
    const body = (await c.req.json().catch(() => null)) as Record<string, unknown> | null;
    const parsed = parseOverride(body, o.matcher());
    if (typeof parsed === 'string') return errorResponse(badRequest(parsed));
    await o.overrides.store.set(org, parsed.policy, parsed.override);
    await o.overrides.refresh().catch(() => {});
    o.log.warn(
      { audit: 'override-set', org, policy: parsed.policy, ...shownOverride(parsed.override) },
      'operator set an override',
    );
    return c.json({ org, policy: parsed.policy, ...shownOverride(parsed.override) });
  });
  app.delete('/:org', async (c) => {
    const org = c.req.param('org');
    const policy = c.req.query('policy') || undefined;
    const removed = await o.overrides.store.unset(org, policy);
    await o.overrides.refresh().catch(() => {});
    o.log.warn({ audit: 'override-unset', org, policy: policy ?? '*', removed }, 'operator removed overrides');
    return c.json({ org, ...(policy !== undefined && { policy }), removed });
  });
  return app;
}

/** The override a PUT body asks for, checked against the rules in force; a one-line reason otherwise. */
export function parseOverride(
  body: Record<string, unknown> | null,
  matcher: Matcher,
): { policy: string; override: Override } | string {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return 'Send a JSON object: {"policy": "<rule>.<by>", "count": N, "per": "1m"} or {"policy": ..., "concurrent": N}';
  const policy = body.policy;
  if (typeof policy !== 'string' || policy === '') return 'Give "policy": "<rule>.<by>" or "guard.<id>"';
  const limit = limitNamed(matcher, policy);
  if (limit === undefined) return `No limit of the rules in force is named "${policy.slice(0, 128)}"`;
  if (limit.until !== null) {
    if (body.count !== undefined || body.per !== undefined)
      return `"${policy}" is an in-flight limit: give "concurrent", not "count"/"per"`;
    const n = positive(body.concurrent);
    return n === null ? '"concurrent" must be a whole number of at least 1' : { policy, override: { concurrent: n } };
  }
  if (body.concurrent !== undefined) return `"${policy}" is a rate limit: give "count" (and "per"), not "concurrent"`;
  const count = positive(body.count);
  if (count === null) return '"count" must be a whole number of at least 1';
  let perSeconds: number | null = null;
  if (body.per !== undefined) {
    perSeconds = typeof body.per === 'string' ? parseDuration(body.per) : positive(body.per);
    if (perSeconds === null) return '"per" must be a duration such as "10s", "1m", "1h", "1d" (or seconds, at least 1)';
  }
  return { policy, override: { count, perSeconds } };
}

export function limitNamed(matcher: Matcher, policy: string): Limit | undefined {
  return [...matcher.rules.flatMap((r) => r.limits), ...matcher.guards.map((g) => g.limit)].find(
    (l) => l.policy === policy,
  );
}

function positive(v: unknown): number | null {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= MAX_COUNT ? v : null;
}

export function shownOverride(o: Override): Record<string, number> {
  if ('concurrent' in o) return { concurrent: o.concurrent };
  return { count: o.count, ...(o.perSeconds !== null && { per_seconds: o.perSeconds }) };
}

function shownOne(plan: OrgOverrides): Record<string, Record<string, number>> {
  return Object.fromEntries(Object.entries(plan).map(([p, o]) => [p, shownOverride(o)]));
}

function shown(all: Map<string, OrgOverrides>): [string, Record<string, Record<string, number>>][] {
  return [...all].sort(([a], [b]) => a.localeCompare(b)).map(([org, plan]) => [org, shownOne(plan)]);
}
