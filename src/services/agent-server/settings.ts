import { fileURLToPath } from 'node:url';
import { DEFAULT_MAX_JSON_DEPTH } from '../shared/json-depth.ts';
import { storePrefix as namespacedPrefix } from '../../settings/namespace.ts';
import {
  integer,
  isDevelopment,
  list,
  LOG_LEVELS,
  oneOf,
  port,
  seconds,
  SettingsError,
  text,
  type Env,
} from '../../settings/env.ts';

/**
 * Environment → the Agent Server's frozen settings, read with the settings
 * toolkit: an invalid value fails naming the variable.
 */
export interface AgentServerSettings {
  /** The app config to serve (APP_CONFIG); default the example app. */
  readonly appConfig: string;
  /** Port when it runs alone (AGENT_SERVER_PORT; 8123, the JS client's default). */
  readonly port: number;
  /**
   * Keys accepted when it runs alone (AGENT_SERVER_API_KEYS, comma-separated); behind the gateway the key registry
   * decides.
   */
  readonly apiKeys: readonly string[];
  /** Organisation owning those keys (AGENT_SERVER_ORG). */
  readonly org: string;
  readonly heartbeatMs: number;
  /**
   * Prefix of the Agent Server's Redis keys (store and checkpointer) when REDIS_URL is set (AGENT_STORE_PREFIX; default
   * `agent`).
   */
  readonly storePrefix: string;
  readonly logLevel: string;
  /** Deepest nesting of a JSON request body (MAX_JSON_DEPTH, default 64): deeper answers 422 `json_too_deep`. */
  readonly maxJsonDepth: number;
  /** NODE_ENV is not `production`: without AGENT_SERVER_API_KEYS a random key is made and printed. */
  readonly development: boolean;
}

export const EXAMPLE_APP_CONFIG = fileURLToPath(new URL('../../../examples/app/langgraph.json', import.meta.url));

export function loadAgentServerSettings(env: Env): AgentServerSettings {
  const keys = list(env, 'AGENT_SERVER_API_KEYS');
  for (const k of keys)
    if (k.length < 16) throw new SettingsError('AGENT_SERVER_API_KEYS', 'each key must be at least 16 characters');
  const heartbeatSeconds = seconds(env, 'SSE_HEARTBEAT_SECONDS', 10, 0.05, 300);
  const agentPort = port(env, 'AGENT_SERVER_PORT', 8123);
  const storePrefix = namespacedPrefix(
    env,
    'AGENT_STORE_PREFIX',
    /^[A-Za-z0-9:_.-]{1,100}$/,
    'agent',
    '1-100 characters of letters, digits, ":", "_", "." or "-"',
  );
  const logLevel = oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info');
  return Object.freeze({
    appConfig: text(env, 'APP_CONFIG', EXAMPLE_APP_CONFIG),
    port: agentPort,
    apiKeys: keys,
    org: text(env, 'AGENT_SERVER_ORG', 'dev'),
    heartbeatMs: Math.round(heartbeatSeconds * 1000),
    storePrefix,
    logLevel,
    maxJsonDepth: integer(env, 'MAX_JSON_DEPTH', DEFAULT_MAX_JSON_DEPTH, 1, 1000),
    development: isDevelopment(env),
  });
}
