import { fileURLToPath } from 'node:url';
import { DEFAULT_MAX_JSON_DEPTH } from '../shared/json-depth.ts';
import { checkAllowedHosts } from '../shared/outbound-address.ts';
import { databaseSettings, type DatabaseSettings } from '../../settings/database.ts';
import { redisUrlSetting } from '../../settings/key-registry.ts';
import { storePrefix as namespacedPrefix } from '../../settings/namespace.ts';
import {
  bytes,
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
import { DEFAULT_AGENT_QUOTAS as D, type AgentQuotas } from './quotas.ts';

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
  /** How often expired store items and threads are swept (TTL_SWEEP_SECONDS, default 60). */
  readonly ttlSweepMs: number;
  /**
   * Prefix of the Agent Server's Redis keys (store and checkpointer) when REDIS_URL is set (AGENT_STORE_PREFIX; default
   * `agent`).
   */
  readonly storePrefix: string;
  /**
   * DATABASE_URI and DATABASE_POOL_SIZE (settings/database.ts): the server keeps assistants, threads, runs, crons,
   * store items and checkpoints in that PostgreSQL. Null: in Redis with REDIS_URL, else in memory.
   */
  readonly database: DatabaseSettings | null;
  /** REDIS_URL (or its alias REDIS_URI). */
  readonly redisUrl: string | null;
  readonly logLevel: string;
  /** Deepest nesting of a JSON request body (MAX_JSON_DEPTH, default 64): deeper answers 422 `json_too_deep`. */
  readonly maxJsonDepth: number;
  /** NODE_ENV is not `production`: without AGENT_SERVER_API_KEYS a random key is made and printed. */
  readonly development: boolean;
  /** MAX_CRONS, MIN_CRON_INTERVAL_SECONDS, MAX_STORE_ITEMS, MAX_STORE_BYTES and their per-user forms (quotas.ts). */
  readonly quotas: AgentQuotas;
  /**
   * WEBHOOK_HOSTS_ALLOWED: hosts (`host`, `host:port`) and addresses (IP, CIDR) a run's webhook may reach although they
   * are loopback, private or reserved (as REPO_HOSTS_ALLOWED for a deployment's repo_url).
   */
  readonly webhookHostsAllowed: readonly string[];
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
    ttlSweepMs: ttlSweepMs(env),
    storePrefix,
    database: databaseSettings(env),
    redisUrl: redisUrlSetting(env),
    logLevel,
    maxJsonDepth: integer(env, 'MAX_JSON_DEPTH', DEFAULT_MAX_JSON_DEPTH, 1, 1000),
    development: isDevelopment(env),
    quotas: quotas(env),
    webhookHostsAllowed: webhookHostsAllowed(env),
  });
}

/**
 * TTL_SWEEP_SECONDS in ms. Also read by the control plane for its deployments' Agent Servers (the operator's value,
 * never a deployment's own variable).
 */
export function ttlSweepMs(env: Env): number {
  return Math.round(seconds(env, 'TTL_SWEEP_SECONDS', 60, 0.05, 86_400) * 1000);
}

/** WEBHOOK_HOSTS_ALLOWED, checked. Also read by the control plane for its deployments' Agent Servers (as above). */
export function webhookHostsAllowed(env: Env): string[] {
  const entries = list(env, 'WEBHOOK_HOSTS_ALLOWED');
  try {
    checkAllowedHosts(entries);
  } catch (err) {
    throw new SettingsError('WEBHOOK_HOSTS_ALLOWED', (err as Error).message);
  }
  return entries;
}

function quotas(env: Env): AgentQuotas {
  return Object.freeze({
    maxCrons: integer(env, 'MAX_CRONS', D.maxCrons, 0, 1_000_000),
    maxCronsPerUser: integer(env, 'MAX_CRONS_PER_USER', D.maxCronsPerUser, 0, 1_000_000),
    minCronIntervalSeconds: integer(env, 'MIN_CRON_INTERVAL_SECONDS', D.minCronIntervalSeconds, 1, 31_536_000),
    maxStoreItems: integer(env, 'MAX_STORE_ITEMS', D.maxStoreItems, 0, 1_000_000_000),
    maxStoreBytes: bytes(env, 'MAX_STORE_BYTES', D.maxStoreBytes),
    maxStoreItemsPerUser: integer(env, 'MAX_STORE_ITEMS_PER_USER', D.maxStoreItemsPerUser, 0, 1_000_000_000),
    maxStoreBytesPerUser: bytes(env, 'MAX_STORE_BYTES_PER_USER', D.maxStoreBytesPerUser),
    maxStoreValueBytes: bytes(env, 'MAX_STORE_VALUE_BYTES', D.maxStoreValueBytes),
  });
}
