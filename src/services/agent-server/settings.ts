import { fileURLToPath } from 'node:url';
import { SettingsError } from '../../settings.ts';

/**
 * Environment → the Agent Server's frozen settings, in the style of
 * src/settings.ts: an invalid value fails naming the variable.
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
  /** NODE_ENV is not `production`: without AGENT_SERVER_API_KEYS a random key is made and printed. */
  readonly development: boolean;
}

export const EXAMPLE_APP_CONFIG = fileURLToPath(new URL('../../../examples/app/langgraph.json', import.meta.url));

type Env = Readonly<Record<string, string | undefined>>;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function loadAgentServerSettings(env: Env = process.env): AgentServerSettings {
  const keys = text(env, 'AGENT_SERVER_API_KEYS', '')
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
  for (const k of keys)
    if (k.length < 16) throw new SettingsError('AGENT_SERVER_API_KEYS', 'each key must be at least 16 characters');
  const heartbeat = text(env, 'SSE_HEARTBEAT_SECONDS', '10');
  const seconds = /^\d+(\.\d+)?$/.test(heartbeat) ? Number(heartbeat) : NaN;
  if (!(seconds >= 0.05 && seconds <= 300))
    throw new SettingsError('SSE_HEARTBEAT_SECONDS', `must be a number of seconds 0.05-300, got "${heartbeat}"`);
  const port = text(env, 'AGENT_SERVER_PORT', '8123');
  if (!/^\d{1,5}$/.test(port) || Number(port) > 65535)
    throw new SettingsError('AGENT_SERVER_PORT', `must be a port number 0-65535, got "${port}"`);
  const storePrefix = text(env, 'AGENT_STORE_PREFIX', 'agent');
  if (!/^[A-Za-z0-9:_.-]{1,100}$/.test(storePrefix))
    throw new SettingsError(
      'AGENT_STORE_PREFIX',
      `must be 1-100 characters of letters, digits, ":", "_", "." or "-", got "${storePrefix}"`,
    );
  const logLevel = text(env, 'LOG_LEVEL', 'info').toLowerCase();
  if (!LOG_LEVELS.includes(logLevel))
    throw new SettingsError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  return Object.freeze({
    appConfig: text(env, 'APP_CONFIG', EXAMPLE_APP_CONFIG),
    port: Number(port),
    apiKeys: keys,
    org: text(env, 'AGENT_SERVER_ORG', 'dev'),
    heartbeatMs: Math.round(seconds * 1000),
    storePrefix,
    logLevel,
    development: text(env, 'NODE_ENV', 'development').toLowerCase() !== 'production',
  });
}

function text(env: Env, name: string, fallback: string): string {
  const v = env[name]?.trim();
  return v === undefined || v === '' ? fallback : v;
}
