import { REGIONS, type Region } from './rules/load.ts';

/**
 * Environment → one frozen, typed Settings. An invalid value fails at boot
 * with a message naming the variable; an unset one takes the documented default.
 */
export interface Settings {
  readonly port: number;
  readonly adminPort: number;
  readonly region: Region;
  readonly rulesDir: string;
  /** Prefix of every bucket key in the store. */
  readonly keyPrefix: string;
  /** Secret of the keyed hash that replaces identities in bucket keys. */
  readonly identitySecret: string;
  /** True when IDENTITY_SECRET is unset and the public development secret is in use. */
  readonly identitySecretIsDefault: boolean;
  readonly logLevel: string;
  /** Redis for buckets; null = in-memory store. */
  readonly redisUrl: string | null;
  /** Redis Cluster seed nodes (`host:port`); empty = not a cluster. */
  readonly redisClusterNodes: readonly { host: string; port: number }[];
  readonly storeTimeoutMs: number;
  readonly failMode: 'open' | 'closed';
  /** CIDRs of proxies whose X-Forwarded-For is believed. */
  readonly trustProxy: readonly string[];
  readonly ipv6PrefixBits: number;
  /** Upstream URLs; null = the built-in one started in process. */
  readonly controlPlaneUrl: string | null;
  readonly agentServerUrl: string | null;
  readonly upstreamTimeoutMs: number;
  readonly maxBodyBytes: number;
  /** Most buckets of the in-memory store. */
  readonly memoryMaxKeys: number;
  /** Edge processes sharing the store: the fail-open fallback divides each limit by it. */
  readonly expectedInstances: number;
  /** `all`: every rule counts and reports but never denies. */
  readonly shadowAll: boolean;
  /** KEY_CHECK: on, off, or null = on exactly when both upstreams are the bundled services. */
  readonly keyCheck: 'on' | 'off' | null;
  /** Grace for in-flight requests and open streams on SIGTERM. */
  readonly drainMs: number;
  /** Most open client connections; more are refused at accept. */
  readonly maxConnections: number;
}

export class SettingsError extends Error {
  readonly code = 'invalid_settings';
  constructor(
    readonly variable: string,
    reason: string,
  ) {
    super(`${variable}: ${reason}`);
    this.name = 'SettingsError';
  }
}

/**
 * Used when IDENTITY_SECRET is unset. Every process then derives the same keys, which is what a local setup wants;
 * production sets its own.
 */
export const DEVELOPMENT_IDENTITY_SECRET = 'development-identity-secret-set-IDENTITY_SECRET-in-production';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

type Env = Readonly<Record<string, string | undefined>>;

export function loadSettings(env: Env = process.env): Settings {
  const secret = text(env, 'IDENTITY_SECRET', '');
  if (secret !== '' && secret.length < 16) throw new SettingsError('IDENTITY_SECRET', 'must be at least 16 characters');
  return Object.freeze({
    port: port(env, 'PORT', 8080),
    adminPort: port(env, 'ADMIN_PORT', 9090),
    region: oneOf(env, 'REGION', REGIONS, 'us'),
    rulesDir: text(env, 'RULES_DIR', 'rules'),
    keyPrefix: matching(
      env,
      'KEY_PREFIX',
      /^[A-Za-z0-9_.-]{1,32}$/,
      'rl',
      'letters, digits, "_", "." or "-", at most 32',
    ),
    identitySecret: secret || DEVELOPMENT_IDENTITY_SECRET,
    identitySecretIsDefault: secret === '',
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    redisUrl: optionalUrl(env, 'REDIS_URL', ['redis:', 'rediss:']),
    redisClusterNodes: list(env, 'REDIS_CLUSTER_NODES').map((n) => hostPort('REDIS_CLUSTER_NODES', n)),
    storeTimeoutMs: integer(env, 'STORE_TIMEOUT_MS', 50, 1, 60_000),
    failMode: oneOf(env, 'FAIL_MODE', ['open', 'closed'] as const, 'open'),
    trustProxy: list(env, 'TRUST_PROXY'),
    ipv6PrefixBits: integer(env, 'IPV6_PREFIX', 64, 1, 128),
    controlPlaneUrl: optionalUrl(env, 'CONTROL_PLANE_URL', ['http:', 'https:']),
    agentServerUrl: optionalUrl(env, 'AGENT_SERVER_URL', ['http:', 'https:']),
    upstreamTimeoutMs: duration(env, 'UPSTREAM_TIMEOUT', 30_000),
    maxBodyBytes: bytes(env, 'MAX_BODY', 10 * 1024 * 1024),
    memoryMaxKeys: integer(env, 'MEMORY_MAX_KEYS', 500_000, 1_000, 50_000_000),
    expectedInstances: integer(env, 'EXPECTED_INSTANCES', 1, 1, 10_000),
    shadowAll: oneOf(env, 'SHADOW', ['off', 'all'] as const, 'off') === 'all',
    keyCheck:
      env.KEY_CHECK === undefined || env.KEY_CHECK === ''
        ? null
        : oneOf(env, 'KEY_CHECK', ['on', 'off'] as const, 'on'),
    drainMs: integer(env, 'DRAIN_SECONDS', 10, 0, 3600) * 1000,
    maxConnections: integer(env, 'MAX_CONNECTIONS', 10_000, 1, 1_000_000),
  });
}

function list(env: Env, name: string): string[] {
  return text(env, name, '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const v = text(env, name, String(fallback));
  const n = /^\d+$/.test(v) ? Number(v) : NaN;
  if (!(n >= min && n <= max)) throw new SettingsError(name, `must be a whole number ${min}-${max}, got "${v}"`);
  return n;
}

function optionalUrl(env: Env, name: string, protocols: readonly string[]): string | null {
  const v = text(env, name, '');
  if (v === '') return null;
  if (!URL.canParse(v) || !protocols.includes(new URL(v).protocol)) {
    throw new SettingsError(name, `must be a ${protocols.map((p) => p + '//').join(' or ')} URL, got "${v}"`);
  }
  return v;
}

function hostPort(name: string, entry: string): { host: string; port: number } {
  const m = /^(.+):(\d{1,5})$/.exec(entry);
  if (!m || Number(m[2]) > 65535) throw new SettingsError(name, `each node must be host:port, got "${entry}"`);
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) };
}

/** `30s`, `500ms`, `2m`, or a plain number of seconds → milliseconds. */
function duration(env: Env, name: string, fallbackMs: number): number {
  const v = text(env, name, '');
  if (v === '') return fallbackMs;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(v);
  if (!m) throw new SettingsError(name, `must be a duration such as 30s, 500ms or 2m, got "${v}"`);
  const ms = Number(m[1]) * (m[2] === 'ms' ? 1 : m[2] === 'm' ? 60_000 : 1000);
  if (!(ms >= 1)) throw new SettingsError(name, `must be at least 1ms, got "${v}"`);
  return ms;
}

/** `10485760`, `512KiB`, `10MiB`, `1GiB` (also KB/MB/GB, taken as binary) → bytes. */
function bytes(env: Env, name: string, fallback: number): number {
  const v = text(env, name, '');
  if (v === '') return fallback;
  const m = /^(\d+)\s*(k|kb|kib|m|mb|mib|g|gb|gib)?$/i.exec(v);
  if (!m) throw new SettingsError(name, `must be a size such as 10MiB or 1048576, got "${v}"`);
  const unit = (m[2] ?? '').toLowerCase()[0];
  return Number(m[1]) * (unit === 'k' ? 1024 : unit === 'm' ? 1024 ** 2 : unit === 'g' ? 1024 ** 3 : 1);
}

function text(env: Env, name: string, fallback: string): string {
  const v = env[name]?.trim();
  return v === undefined || v === '' ? fallback : v;
}

function port(env: Env, name: string, fallback: number): number {
  const v = text(env, name, String(fallback));
  const n = /^\d{1,5}$/.test(v) ? Number(v) : NaN;
  if (!(n >= 0 && n <= 65535)) throw new SettingsError(name, `must be a port number 0-65535, got "${v}"`);
  return n;
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const v = text(env, name, fallback).toLowerCase();
  if (!values.includes(v as T)) throw new SettingsError(name, `must be one of ${values.join(', ')}, got "${v}"`);
  return v as T;
}

function matching(env: Env, name: string, re: RegExp, fallback: string, what: string): string {
  const v = text(env, name, fallback);
  if (!re.test(v)) throw new SettingsError(name, `must be ${what}, got "${v}"`);
  return v;
}
