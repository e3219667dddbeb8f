import { accessSync, constants } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { REGIONS, type Region } from '../region.ts';
import { usableCpus } from '../workers/cpu-count.ts';
import { ESCAPED_SLASHES, type EscapedSlashes } from '../rules/normalize-path.ts';
import {
  bytes,
  duration,
  integer,
  list,
  LOG_LEVELS,
  oneOf,
  optionalUrl,
  port,
  SettingsError,
  text,
  type Env,
} from './env.ts';
import { deploymentsDomain, publicUrl, routesPrefixSetting } from './deployment-routes.ts';
import { redisUrlVariable } from './key-registry.ts';
import { storePrefix } from './namespace.ts';
import { trustedProxies, type TrustedProxies } from '../edge/client-ip.ts';
import { LOG_FORMATS, type LogFormat } from '../log.ts';

/**
 * Environment → the edge's frozen, typed settings: what `gateway start` runs in every edge process, and what
 * `gateway explain` reads. An invalid value fails at boot with a message naming the variable; an unset one takes the
 * documented default. The bundled services' settings join them in settings.ts.
 */
export interface EdgeSettings {
  readonly port: number;
  /**
   * HOST: the public listener's address; null (unset) = every interface, IPv6 and IPv4 (`::` dual-stack), or
   * `0.0.0.0` where the host has no IPv6.
   */
  readonly host: string | null;
  readonly adminPort: number;
  /** ADMIN_HOST: the admin listener's address (default 127.0.0.1: /metrics and /readyz stay on the machine). */
  readonly adminHost: string;
  /**
   * ADMIN_TOKEN: when set, the admin listener's /metrics answers only `authorization: Bearer <token>` (every tenant's
   * traffic is in it, and a deployment's process shares the loopback); null = open, as a Prometheus on the host expects.
   */
  readonly adminToken: string | null;
  readonly region: Region;
  readonly rulesDir: string;
  /** Prefix of every bucket key in the store. */
  readonly keyPrefix: string;
  /** Secret of the keyed hash that replaces identities in bucket keys. */
  readonly identitySecret: string;
  /** True when IDENTITY_SECRET is unset and the public development secret is in use. */
  readonly identitySecretIsDefault: boolean;
  readonly logLevel: string;
  /** LOG_FORMAT: `json` lines (default) or `pretty` (pino-pretty, for a terminal). */
  readonly logFormat: LogFormat;
  /** Redis for buckets; null = in-memory store. */
  readonly redisUrl: string | null;
  /** Redis Cluster seed nodes (`host:port`); empty = not a cluster. */
  readonly redisClusterNodes: readonly { host: string; port: number }[];
  readonly storeTimeoutMs: number;
  /** SLOT_LEASE_MS: how long an in-flight slot outlives its edge (the lease a live edge renews every third of it). */
  readonly slotLeaseMs: number;
  readonly failMode: 'open' | 'closed';
  /** TRUST_PROXY: the proxies (CIDRs) whose X-Forwarded-For is believed. */
  readonly trustProxy: TrustedProxies;
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
  /** KEY_CHECK as decided: on, off, or (unset) on exactly when both upstreams are the bundled services. */
  readonly keyCheck: boolean;
  /** Grace for in-flight requests and open streams on SIGTERM. */
  readonly drainMs: number;
  /** Most open client connections; more are refused at accept. */
  readonly maxConnections: number;
  /** WEBSOCKET_IDLE_TIMEOUT: a WebSocket with no byte either way for this long is closed (1001). */
  readonly webSocketIdleMs: number;
  /** HTTP_MAX_CONNECTIONS_PER_IP: most connections one client address holds open per edge process. */
  readonly httpMaxConnectionsPerIp: number;
  /** WEBSOCKET_MAX_PER_IP: most WebSockets one client address holds open (handshakes included) per edge process. */
  readonly webSocketMaxPerIp: number;
  /** Longest value (bytes) of an identity header (`x-api-key`, `x-user-id`); longer answers 400, counted by IP. */
  readonly maxIdentityLength: number;
  /** What the edge does with `%2F` / `%5C` in a path: reject (400), unescape (decode, match and forward), keep. */
  readonly escapedSlashes: EscapedSlashes;
  /**
   * PUBLIC_URL: the edge's public address, the base of a deployment's path-form `url`
   * (`{PUBLIC_URL}/deployments/{id}`); null = the edge's own address once listening (`http://localhost:<port>`).
   */
  readonly publicUrl: string | null;
  /** DEPLOYMENTS_DOMAIN: deployments are also served at `{id}.{domain}` (Host header), and their `url` is that. */
  readonly deploymentsDomain: string | null;
  /** ROUTES_PREFIX: prefix of the deployment route table's Redis keys (`<prefix>:<region>:{routes}:...`). */
  readonly routesPrefix: string;
  /**
   * WORKERS: edge processes sharing the public port (`auto`: one per CPU the process may use, within a container's
   * CPU quota).
   */
  readonly workers: number;
  /** WORKERS is `auto`: without REDIS_URL the gateway then runs one edge process instead of refusing to start. */
  readonly workersAuto: boolean;
}

/**
 * Used when IDENTITY_SECRET is unset. Every process then derives the same keys, which is what a local setup wants;
 * production sets its own.
 */
export const DEVELOPMENT_IDENTITY_SECRET = 'development-identity-secret-set-IDENTITY_SECRET-in-production';

export function loadEdgeSettings(env: Env): EdgeSettings {
  const { keyCheck: asked, ...settings } = readVariables(env);
  return Object.freeze({ ...settings, keyCheck: keyCheckOn(asked, settings) });
}

/** Each variable in turn (the first invalid one is the one reported); KEY_CHECK as given, decided by keyCheckOn. */
function readVariables(env: Env): Omit<EdgeSettings, 'keyCheck'> & { keyCheck: 'on' | 'off' | null } {
  const secret = text(env, 'IDENTITY_SECRET', '');
  if (secret !== '' && secret.length < 16) throw new SettingsError('IDENTITY_SECRET', 'must be at least 16 characters');
  const region = oneOf(env, 'REGION', REGIONS, 'us');
  return {
    port: port(env, 'PORT', 8080),
    host: listenAddress(env, 'HOST', null),
    adminPort: port(env, 'ADMIN_PORT', 9090),
    adminHost: listenAddress(env, 'ADMIN_HOST', '127.0.0.1'),
    adminToken: text(env, 'ADMIN_TOKEN', '') || null,
    region,
    rulesDir: rulesDir(env, region),
    keyPrefix: storePrefix(
      env,
      'KEY_PREFIX',
      /^[A-Za-z0-9_.-]{1,32}$/,
      'rl',
      'letters, digits, "_", "." or "-", at most 32',
    ),
    identitySecret: secret || DEVELOPMENT_IDENTITY_SECRET,
    identitySecretIsDefault: secret === '',
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    logFormat: oneOf(env, 'LOG_FORMAT', LOG_FORMATS, 'json'),
    redisUrl: optionalUrl(env, redisUrlVariable(env), ['redis:', 'rediss:']),
    redisClusterNodes: list(env, 'REDIS_CLUSTER_NODES').map((n) => hostPort('REDIS_CLUSTER_NODES', n)),
    storeTimeoutMs: integer(env, 'STORE_TIMEOUT_MS', 50, 1, 60_000),
    slotLeaseMs: integer(env, 'SLOT_LEASE_MS', 30_000, 300, 3_600_000),
    failMode: oneOf(env, 'FAIL_MODE', ['open', 'closed'] as const, 'open'),
    trustProxy: trustProxy(env),
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
    webSocketIdleMs: duration(env, 'WEBSOCKET_IDLE_TIMEOUT', 300_000),
    webSocketMaxPerIp: integer(env, 'WEBSOCKET_MAX_PER_IP', 256, 1, 1_000_000),
    httpMaxConnectionsPerIp: integer(env, 'HTTP_MAX_CONNECTIONS_PER_IP', 256, 1, 1_000_000),
    maxIdentityLength: integer(env, 'MAX_IDENTITY_LENGTH', 256, 16, 8192),
    escapedSlashes: oneOf(env, 'ESCAPED_SLASHES', ESCAPED_SLASHES, 'reject'),
    publicUrl: publicUrl(env),
    deploymentsDomain: deploymentsDomain(env),
    routesPrefix: routesPrefixSetting(env),
    workers: workerCount(env),
    workersAuto: text(env, 'WORKERS', '').toLowerCase() === 'auto',
  };
}

/** TRUST_PROXY: comma-separated addresses and CIDRs; one that is neither fails naming the variable. */
function trustProxy(env: Env): TrustedProxies {
  try {
    return trustedProxies(list(env, 'TRUST_PROXY'));
  } catch (err) {
    throw new SettingsError('TRUST_PROXY', (err as Error).message);
  }
}

/**
 * KEY_CHECK's default is on when both upstreams are the bundled services (the registry is this process's own). Asked
 * for with an external control plane, the registry must be the platform's, in Redis.
 */
function keyCheckOn(
  asked: 'on' | 'off' | null,
  { controlPlaneUrl, agentServerUrl, redisUrl }: Pick<EdgeSettings, 'controlPlaneUrl' | 'agentServerUrl' | 'redisUrl'>,
): boolean {
  const on = asked === 'on' || (asked === null && controlPlaneUrl === null && agentServerUrl === null);
  if (on && controlPlaneUrl !== null && redisUrl === null) {
    throw new SettingsError(
      'KEY_CHECK',
      'on with CONTROL_PLANE_URL needs REDIS_URL, where the platform keeps its key registry',
    );
  }
  return on;
}

/** WORKERS: a whole number 1-1024, or `auto` (the CPUs this process may use, see usableCpus). */
function workerCount(env: Env): number {
  const v = text(env, 'WORKERS', '1').toLowerCase();
  if (v === 'auto') return usableCpus();
  const n = /^\d+$/.test(v) ? Number(v) : NaN;
  if (!(n >= 1 && n <= 1024)) throw new SettingsError('WORKERS', `must be a whole number 1-1024 or auto, got "${v}"`);
  return n;
}

function hostPort(name: string, entry: string): { host: string; port: number } {
  const m = /^(.+):(\d{1,5})$/.exec(entry);
  if (!m || Number(m[2]) > 65535) throw new SettingsError(name, `each node must be host:port, got "${entry}"`);
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) };
}

/** An IP address to listen on (`0.0.0.0`, `::`, `127.0.0.1`, `::1`, `[::1]`, an interface's address). */
/** RULES_DIR, holding the region's rule file: a missing or unreadable one is a setting to fix, said in one line. */
function rulesDir(env: Env, region: Region): string {
  const dir = text(env, 'RULES_DIR', 'rules');
  const file = resolve(dir, `${region}.yaml`);
  try {
    accessSync(file, constants.R_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const what = code === 'ENOENT' ? 'does not exist' : `cannot be read (${code})`;
    throw new SettingsError(
      'RULES_DIR',
      `must be a folder holding ${region}.yaml for REGION=${region}: ${file} ${what}`,
    );
  }
  return dir;
}

function listenAddress<T extends string | null>(env: Env, name: string, fallback: T): string | T {
  const v = text(env, name, '');
  if (v === '') return fallback;
  const address = v.replace(/^\[(.*)\]$/, '$1');
  if (isIP(address) === 0)
    throw new SettingsError(name, `must be an IP address to listen on (0.0.0.0, ::, 127.0.0.1, ::1), got "${v}"`);
  return address;
}
