import { matching, SettingsError, text, type Env } from './env.ts';

/**
 * REDIS_PREFIX: one namespace for everything a gateway keeps in a Redis it shares (with other gateways, other
 * regions' stacks, other applications). Unset, each store keeps its own default prefix, as before; set to `team-a`,
 * each default becomes `team-a:<default>` (`team-a:rl`, `team-a:keys`, `team-a:cp`, `team-a:routes`, `team-a:agent`,
 * `team-a:deployment`). A store's own variable (KEY_PREFIX, API_KEYS_PREFIX, ...) still overrides it, taken as given.
 */
export function redisNamespace(env: Env): string | null {
  const v = text(env, 'REDIS_PREFIX', '');
  if (v === '') return null;
  // No ":" of its own: every store's own pattern accepts letters, digits, "_", "." and "-".
  if (!/^[A-Za-z0-9_.-]{1,32}$/.test(v))
    throw new SettingsError('REDIS_PREFIX', `must be 1-32 letters, digits, "_", "." or "-", got "${v}"`);
  return v;
}

/**
 * The key prefix of one store: its own variable when set (checked against `re`, as it always was), else its default
 * under REDIS_PREFIX (checked as REDIS_PREFIX), else its default.
 */
export function storePrefix(env: Env, name: string, re: RegExp, fallback: string, what: string): string {
  if (text(env, name, '') !== '') return matching(env, name, re, fallback, what);
  const namespace = redisNamespace(env);
  return namespace === null ? fallback : `${namespace}:${fallback}`;
}
