import { optionalUrl, renamed, SettingsError, text, type Env } from './env.ts';
import { storePrefix } from './namespace.ts';

/**
 * Where the API-key registry lives: read by the bundled services, the control plane and `gateway keys`, so it sits
 * beside the settings toolkit rather than in any one of them.
 */
export interface KeyRegistrySettings {
  /** Redis of the registry (REDIS_URL); null = in memory. */
  readonly redisUrl: string | null;
  /** Prefix of the registry's Redis keys (API_KEYS_PREFIX, formerly KEYS_PREFIX). */
  readonly prefix: string;
  /** Set when the deprecated KEYS_PREFIX is in the environment: log it once at start. */
  readonly warning: string | null;
}

export function loadKeyRegistrySettings(env: Env): KeyRegistrySettings {
  const redisUrl = redisUrlSetting(env);
  return Object.freeze({ redisUrl, ...keysPrefixSetting(env) });
}

/**
 * REDIS_URL as the services read it. `{id}` is tolerated in it, as it always was, because the control plane checks
 * REDIS_URL and DEPLOYMENT_URL with one reader.
 */
export function redisUrlSetting(env: Env): string | null {
  return optionalUrl(env, redisUrlVariable(env), ['redis:', 'rediss:'], { placeholder: '{id}' });
}

/**
 * Which variable holds the Redis URL: REDIS_URL, or REDIS_URI (the official Agent Server's name, accepted as its alias)
 * when only that is set. Both set to different values fails, naming REDIS_URI.
 */
export function redisUrlVariable(env: Env): 'REDIS_URL' | 'REDIS_URI' {
  const [url, uri] = [text(env, 'REDIS_URL', ''), text(env, 'REDIS_URI', '')];
  if (uri === '') return 'REDIS_URL';
  if (url === '') return 'REDIS_URI';
  if (url !== uri)
    throw new SettingsError('REDIS_URI', 'is an alias of REDIS_URL, which is set to another value: set one');
  return 'REDIS_URL';
}

/** A prefix of the services' Redis keys: 1-128 of letters, digits, `_`, `.`, `:`, `-`; unset, under REDIS_PREFIX. */
export function servicePrefix(env: Env, name: string, fallback: string): string {
  return storePrefix(env, name, /^[A-Za-z0-9_.:-]{1,128}$/, fallback, '1-128 letters, digits, "_", ".", ":" or "-"');
}

/**
 * API_KEYS_PREFIX (default `keys`). KEYS_PREFIX, its old name, was one letter away from KEY_PREFIX (the bucket keys'
 * prefix): it still works, with a warning.
 */
export function keysPrefixSetting(env: Env): { prefix: string; warning: string | null } {
  const { variable, warning } = renamed(env, 'API_KEYS_PREFIX', 'KEYS_PREFIX');
  return { prefix: servicePrefix(env, variable, 'keys'), warning };
}
