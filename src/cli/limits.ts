import { adminCaller as operatorCall } from './admin-client.ts';
import { overrideStoreFromSettings, type OrgOverrides, type Override } from '../limiter/overrides.ts';
import type { Output } from '../process/output.ts';
import type { EdgeSettings } from '../settings/edge.ts';
import { SettingsError } from '../settings/env.ts';
import { commandArgs, USAGE_EXIT_CODE, UsageError } from './args.ts';

export const LIMITS_USAGE = `usage: gateway limits set --org <organisation> <policy> (--count N [--per 1m] | --concurrent N) [--admin-url <url>]
       gateway limits list [--org <organisation>] [--json] [--admin-url <url>]
       gateway limits unset --org <organisation> [<policy>] [--admin-url <url>]

  Plans per organisation: the requests whose API key belongs to <organisation> get other numbers for a limit of the
  rules in force, named by its policy (<rule>.<by>, or guard.<id>, as in RateLimit-Policy and gateway explain).
  set     a rate limit's count (and period; else the rule's), or an in-flight limit's slots
  list    the overrides (of one organisation with --org)
  unset   one override, or all of the organisation's
  Every edge sharing the store applies a change within a second; no reload. Stored in Redis (survives restarts).

  It asks a running gateway's admin listener (--admin-url, default http://127.0.0.1:$ADMIN_PORT, 9090) with ADMIN_TOKEN,
  the operator token the gateway was started with. Exit 0 done, 1 refused (an unknown policy, a bad number),
  2 usage, or the gateway unreachable.
`;

const OPTIONS = {
  org: { type: 'string' },
  count: { type: 'string' },
  per: { type: 'string' },
  concurrent: { type: 'string' },
  json: { type: 'boolean', default: false },
  'admin-url': { type: 'string' },
} as const;

class LimitsFailure extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

type Shown = Record<string, Record<string, number>>;

/** `gateway limits ...`; returns the exit status. */
export async function limitsCommand(
  args: readonly string[],
  out: Output,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'set' && sub !== 'list' && sub !== 'unset') {
    const asked = sub === 'help' || sub === '--help' || sub === '-h';
    if (asked || sub === undefined) out.log(LIMITS_USAGE);
    else out.err(`gateway limits: unknown command "${sub}" (see gateway limits --help)`);
    return asked ? 0 : USAGE_EXIT_CODE;
  }
  const name = `gateway limits ${sub}`;
  try {
    const { values, positionals } = commandArgs(`limits ${sub}`, rest, OPTIONS, sub !== 'list');
    if (values.help) {
      out.log(LIMITS_USAGE);
      return 0;
    }
    const org = values.org;
    if (sub !== 'list' && !org) throw new UsageError('--org is required', `see gateway limits --help`);
    const call = adminCaller(values['admin-url'], env);
    const at = `/limits/overrides/${encodeURIComponent(org ?? '')}`;
    if (sub === 'set') {
      if (positionals.length !== 1) throw new UsageError('expected one policy (<rule>.<by> or guard.<id>)');
      const body: Record<string, unknown> = { policy: positionals[0] };
      if (values.count !== undefined) body.count = number('--count', values.count);
      if (values.per !== undefined) body.per = values.per;
      if (values.concurrent !== undefined) body.concurrent = number('--concurrent', values.concurrent);
      const set = await call('PUT', at, body);
      out.err(`organisation "${org}": ${String(set.policy)} is now ${describe(set as Record<string, number>)}`);
    } else if (sub === 'list') {
      const all = org
        ? { [org]: ((await call('GET', at)) as { overrides: Shown }).overrides }
        : ((await call('GET', '/limits/overrides')) as { overrides: Record<string, Shown> }).overrides;
      if (values.json) out.log(JSON.stringify({ overrides: all }));
      else
        for (const [o, plan] of Object.entries(all))
          for (const [policy, n] of Object.entries(plan)) out.log(`${o}  ${policy}  ${describe(n)}`);
      const n = Object.values(all).reduce((s, p) => s + Object.keys(p).length, 0);
      out.err(`${n} override(s)${org ? ` of organisation "${org}"` : ''}`);
    } else {
      if (positionals.length > 1) throw new UsageError('expected at most one policy');
      const policy = positionals[0];
      const gone = await call('DELETE', policy === undefined ? at : `${at}?policy=${encodeURIComponent(policy)}`);
      out.err(`organisation "${org}": removed ${String(gone.removed)} override(s); the rules' own numbers apply`);
    }
    return 0;
  } catch (err) {
    if (err instanceof LimitsFailure) {
      out.err(`${name}: ${err.message}`);
      return err.exitCode;
    }
    if (err instanceof UsageError) {
      out.err(`${name}: ${err.message} (${err.hint ?? 'see gateway limits --help'})`);
      return USAGE_EXIT_CODE;
    }
    throw err;
  }
}

function number(option: string, text: string): number {
  if (!/^[0-9]{1,10}$/.test(text)) throw new UsageError(`${option} must be a whole number, got "${text}"`);
  return Number(text);
}

function describe(n: Record<string, number>): string {
  if (n.concurrent !== undefined) return `${n.concurrent} in flight`;
  return `${n.count} per ${n.per_seconds !== undefined ? `${n.per_seconds}s` : "the rule's period"}`;
}

/** Calls of the admin listener with the operator token; a LimitsFailure saying what went wrong otherwise. */
function adminCaller(adminUrl: string | undefined, env: NodeJS.ProcessEnv) {
  const base = (adminUrl ?? `http://127.0.0.1:${env.ADMIN_PORT || 9090}`).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]/.test(base)) throw new LimitsFailure(`--admin-url must be an http(s) URL, got "${base}"`, 2);
  const token = env.ADMIN_TOKEN ?? '';
  if (token === '')
    throw new LimitsFailure(
      'ADMIN_TOKEN is not set: run this with the operator token the gateway was started with (ADMIN_TOKEN)',
      2,
    );
  return operatorCall(
    base,
    token,
    (message, code) => new LimitsFailure(message, code),
    (status) => (status === 400 ? 1 : 2),
  );
}

/**
 * `gateway explain --org`: the organisation's overrides, from the store the gateway uses (REDIS_URL / cluster), else
 * from a running gateway's admin listener (its memory).
 */
export async function orgPlan(
  org: string,
  settings: EdgeSettings,
  adminUrl: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ name: string; plan: OrgOverrides }> {
  if (settings.redisUrl !== null || settings.redisClusterNodes.length > 0) {
    const store = overrideStoreFromSettings(settings);
    try {
      return { name: org, plan: (await store.read()).get(org) ?? {} };
    } catch (err) {
      throw new SettingsError('REDIS_URL', `cannot read the overrides from Redis: ${(err as Error).message}`);
    } finally {
      await store.close();
    }
  }
  try {
    const shown = (await adminCaller(adminUrl, env)('GET', `/limits/overrides/${encodeURIComponent(org)}`)) as {
      overrides: Shown;
    };
    const plan: Record<string, Override> = {};
    for (const [p, n] of Object.entries(shown.overrides))
      plan[p] =
        n.concurrent !== undefined
          ? { concurrent: n.concurrent }
          : { count: n.count!, perSeconds: n.per_seconds ?? null };
    return { name: org, plan };
  } catch (err) {
    if (err instanceof LimitsFailure)
      throw new SettingsError('--org', `without REDIS_URL it asks the admin listener: ${err.message}`);
    throw err;
  }
}
