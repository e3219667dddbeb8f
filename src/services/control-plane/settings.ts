import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { REGIONS, type Region } from '../../region.ts';
import {
  integer,
  isDevelopment,
  list,
  LOG_LEVELS,
  oneOf,
  optionalUrl,
  seconds,
  SettingsError,
  text,
  type Env,
} from '../../settings/env.ts';
import { loadRevisionHostSettings, type RevisionHostSettings } from './revision-host-settings.ts';
import { DEFAULT_MAX_JSON_DEPTH } from '../shared/json-depth.ts';
import { DEFAULT_DATABASE_POOL_SIZE } from '../../settings/database.ts';
import { checkAllowedHosts } from '../shared/outbound-address.ts';
import { ttlSweepMs, webhookHostsAllowed } from '../agent-server/settings.ts';
import type { SandboxSetting } from '../revision-host/local/sandbox/probe.ts';
import { parseCidr, type NetworkSetting } from '../revision-host/local/sandbox/network.ts';
import type { RevisionRedisLimits } from '../revision-host/local/revision-redis.ts';
import { keysPrefixSetting, redisUrlSetting, servicePrefix } from '../../settings/key-registry.ts';
import { storePrefix as namespacedPrefix } from '../../settings/namespace.ts';
// The edge's reading of ROUTES_PREFIX, PUBLIC_URL and DEPLOYMENTS_DOMAIN: one meaning for both.
import { deploymentsDomain, publicUrl, routesPrefixSetting } from '../../settings/deployment-routes.ts';

/**
 * Environment → the control plane's frozen settings, read with the settings
 * toolkit: an invalid value fails naming the variable.
 */
export interface ControlPlaneSettings {
  readonly region: Region;
  /** Redis for deployments, revisions and keys; null = in memory. */
  readonly redisUrl: string | null;
  /** Prefix of the store's Redis keys (`<prefix>:<region>:...`). */
  readonly storePrefix: string;
  /** Prefix of the key registry's Redis keys (API_KEYS_PREFIX). */
  readonly keysPrefix: string;
  /** Set when the deprecated KEYS_PREFIX is in the environment: logged once by whoever opens the registry. */
  readonly keysPrefixWarning: string | null;
  /** AES-256 key for secrets at rest; null = a key generated per process (development). */
  readonly secretsKey: Buffer | null;
  /** Delay per revision step, to reproduce the hosted ~15 minute build. */
  readonly buildDelayMs: number;
  readonly buildConcurrency: number;
  /** Builds of one tenant (workspace) running at once (BUILD_CONCURRENCY_PER_TENANT, default 1); the rest take turns. */
  readonly buildConcurrencyPerTenant: number;
  /** Where builds check sources out (`<workDir>/<region>/<deployment>/<revision>`). */
  readonly workDir: string;
  /** ARTIFACTS_DIR: builds packed as `<sha256>.tar.gz` (default `<BUILD_WORK_DIR>/artifacts`); shared by replicas. */
  readonly artifactsDir: string;
  /** INTERNAL_PORT: the listener of the endpoints a revision's pod uses (`/internal/*`); null = none (default). */
  readonly internalPort: number | null;
  /** Budget of one git command (clone, ls-remote). */
  readonly gitTimeoutMs: number;
  /** Port of the service when it runs alone. */
  readonly port: number;
  readonly logLevel: string;
  /** Deepest nesting of a JSON request body (MAX_JSON_DEPTH, default 64): deeper answers 422 `json_too_deep`. */
  readonly maxJsonDepth: number;
  /** NODE_ENV is not `production`: an empty key registry gets a development key on first start. */
  readonly development: boolean;
  /** LOCAL_REPOS: whether `repo_url` may name a path on this host (default: allowed in development only). */
  readonly localRepos: boolean;
  /** A deployment's `url` (`{id}` is replaced by its id); null = not shown. */
  readonly deploymentUrl: string | null;
  /** NODE_ENV=production: a repo_url may not reach loopback, private or reserved addresses (repo-hosts.ts). */
  readonly repoHostsChecked: boolean;
  /** REPO_HOSTS_ALLOWED: hosts (`host`, `host:port`) and addresses (IP, CIDR) a repo_url may reach all the same. */
  readonly repoHostsAllowed: readonly string[];
  /** Heap bound of a deployment's process without `resource_spec.memory_mb` (DEPLOYMENT_MEMORY_MB, default 512). */
  readonly deploymentMemoryMb: number;
  /**
   * Most `resource_spec.memory_mb` a deployment may ask for (MAX_MEMORY_MB, default a quarter of this host's memory):
   * a tenant never picks a cgroup larger than the host.
   */
  readonly maxMemoryMb: number;
  /** Bounds of one build step (git, npm and its scripts): BUILD_MEMORY_MB (1024), BUILD_MAX_PIDS (256), BUILD_CPUS (1). */
  readonly buildStep: { readonly memoryMb: number; readonly pids: number; readonly cpus: number };
  /** CPUs all of one organisation's revisions and build steps share (ORG_CPUS, default 1), where cgroups can be made. */
  readonly orgCpus: number;
  /** Time a revision's process has to load its app (DEPLOYMENT_LOAD_TIMEOUT_SECONDS, default 60). */
  readonly loadTimeoutMs: number;
  /** Budget of `npm ci` / `npm install` (INSTALL_TIMEOUT_SECONDS, default 600). */
  readonly installTimeoutMs: number;
  /** Most bytes of a build's checkout, .git included (CHECKOUT_MAX_MB, default 1024). */
  readonly checkoutMaxBytes: number;
  /** Most bytes of a build's `node_modules` after its install (NODE_MODULES_MAX_MB, default 2048). */
  readonly nodeModulesMaxBytes: number;
  /** Build folders kept per deployment: the active revision's and the latest other DEPLOYED ones (KEEP_BUILDS, 3). */
  readonly keepBuilds: number;
  /** How often `build_on_push` deployments' branches are checked (BUILD_ON_PUSH_INTERVAL_SECONDS, default 60). */
  readonly pushPollMs: number;
  /**
   * HOSTING_LEASE_SECONDS (default 10): with the local host and Redis, how long the hosting lease outlives a gateway
   * that died holding it; another gateway on the store hosts its deployments after at most that.
   */
  readonly hostingLeaseMs: number;
  /** Drain of a revision's process when another replaces it (DRAIN_SECONDS, default 10, as the edge's). */
  readonly drainMs: number;
  /** Prefix of a deployment's Agent Server data in Redis: `<prefix>:<deployment id>:` (DEPLOYMENT_DATA_PREFIX). */
  readonly deploymentDataPrefix: string;
  /** PUBLIC_URL: the edge's public address for deployment urls; null = `http://localhost:<PORT>`. */
  readonly publicUrl: string | null;
  /** DEPLOYMENTS_DOMAIN: deployment urls are `https://<id>.<domain>`; null = the path form. */
  readonly deploymentsDomain: string | null;
  /** ROUTES_PREFIX: the deployment route table in Redis, shared with the edges (with REDIS_URL). */
  readonly routesPrefix: string;
  /** The edge's PORT (default 8080), for the default PUBLIC_URL. */
  readonly edgePort: number;
  /** SANDBOX: revisions in bubblewrap (`bwrap`), without (`off`), or bwrap when it works here (`auto`, default). */
  readonly sandbox: SandboxSetting;
  /**
   * SANDBOX_NETWORK: each revision in a network namespace of its own with egress through pasta (`pasta`), without
   * egress (`none`), on the host's network (`host`), or pasta when it works here (`auto`, default).
   */
  readonly sandboxNetwork: NetworkSetting;
  /** SANDBOX_NETWORK_ALLOW: private IPv4 ranges (CIDR) a revision may reach all the same. */
  readonly sandboxNetworkAllow: readonly string[];
  /** TRUST_ALL_TENANTS=1: without a sandbox, run every organisation's deployments (else only the gateway's own). */
  readonly trustAllTenants: boolean;
  /**
   * TTL_SWEEP_SECONDS and WEBHOOK_HOSTS_ALLOWED, as the bundled Agent Server reads them: handed to every deployment's
   * Agent Server by the control plane (the process gets them in its start message, not its environment, so a
   * deployment's own `env` or secrets cannot change them).
   */
  readonly revisionAgentServer: { readonly ttlSweepMs: number; readonly webhookHostsAllowed: readonly string[] };
  /** REVISION_HOST and, for `kubernetes`, its namespace, image and network (revision-host-settings.ts). */
  readonly revisionHost: RevisionHostSettings;
  /**
   * DEPLOYMENT_REDIS_*: the bounds of each revision's Redis forwarder (revision-redis.ts): connections at once, idle
   * time, one request's bytes, the deployment's byte budget and how often its usage is measured.
   */
  readonly revisionRedis: RevisionRedisLimits;
  /** MAX_DEPLOYMENTS_PER_TENANT (default 20): a workspace's deployments in this region; one more answers 409. */
  readonly maxDeploymentsPerTenant: number;
  /**
   * DEPLOYMENTS_DATABASE_URI: the operator's PostgreSQL, as a role that may CREATE DATABASE and CREATE ROLE; each
   * deployment gets a database and a role of its own there (databases/deployment-databases.ts). null = none.
   */
  readonly deploymentsDatabaseUri: string | null;
  /**
   * DEPLOYMENT_DATABASE_POOL_SIZE (default 5, 1-100): each revision process's DATABASE_POOL_SIZE; its forwarder lets
   * one more through (the migration lock), its role's CONNECTION LIMIT is twice that (a redeploy's two processes).
   */
  readonly deploymentDatabasePoolSize: number;
}

export function loadControlPlaneSettings(env: Env): ControlPlaneSettings {
  const region = oneOf(env, 'REGION', REGIONS, 'us');
  const redisUrl = redisUrlSetting(env);
  const storePrefix = servicePrefix(env, 'CONTROL_PLANE_PREFIX', 'cp');
  const keys = keysPrefixSetting(env);
  return Object.freeze({
    region,
    redisUrl,
    storePrefix,
    keysPrefix: keys.prefix,
    keysPrefixWarning: keys.warning,
    secretsKey: secretsKey(env),
    buildDelayMs: Math.round(seconds(env, 'BUILD_DELAY_SECONDS', 0, 0, 86_400) * 1000),
    buildConcurrency: integer(env, 'BUILD_CONCURRENCY', 2, 1, 64),
    buildConcurrencyPerTenant: integer(env, 'BUILD_CONCURRENCY_PER_TENANT', 1, 1, 64),
    workDir: text(env, 'BUILD_WORK_DIR', join(tmpdir(), 'gateway-builds')),
    artifactsDir: text(
      env,
      'ARTIFACTS_DIR',
      join(text(env, 'BUILD_WORK_DIR', join(tmpdir(), 'gateway-builds')), 'artifacts'),
    ),
    internalPort: env.INTERNAL_PORT === undefined ? null : integer(env, 'INTERNAL_PORT', 0, 0, 65535),
    gitTimeoutMs: Math.round(seconds(env, 'GIT_TIMEOUT_SECONDS', 60, 0, 86_400) * 1000) || 1,
    port: integer(env, 'CONTROL_PLANE_PORT', 8081, 0, 65535),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    maxJsonDepth: integer(env, 'MAX_JSON_DEPTH', DEFAULT_MAX_JSON_DEPTH, 1, 1000),
    development: isDevelopment(env),
    localRepos: oneOf(env, 'LOCAL_REPOS', ['allow', 'deny'], isDevelopment(env) ? 'allow' : 'deny') === 'allow',
    deploymentUrl: optionalUrl(env, 'DEPLOYMENT_URL', ['http:', 'https:'], { placeholder: '{id}' }),
    repoHostsChecked: !isDevelopment(env),
    repoHostsAllowed: repoHostsAllowed(env),
    ...memorySettings(env),
    buildStep: Object.freeze({
      memoryMb: integer(env, 'BUILD_MEMORY_MB', 1024, 64, 1_048_576),
      pids: integer(env, 'BUILD_MAX_PIDS', 256, 16, 1_000_000),
      cpus: cpus(env, 'BUILD_CPUS', 1),
    }),
    orgCpus: cpus(env, 'ORG_CPUS', 1),
    loadTimeoutMs: Math.round(seconds(env, 'DEPLOYMENT_LOAD_TIMEOUT_SECONDS', 60, 1, 3600) * 1000),
    installTimeoutMs: Math.round(seconds(env, 'INSTALL_TIMEOUT_SECONDS', 600, 1, 86_400) * 1000),
    checkoutMaxBytes: integer(env, 'CHECKOUT_MAX_MB', 1024, 1, 1_048_576) * 1024 * 1024,
    nodeModulesMaxBytes: integer(env, 'NODE_MODULES_MAX_MB', 2048, 1, 1_048_576) * 1024 * 1024,
    keepBuilds: integer(env, 'KEEP_BUILDS', 3, 1, 100),
    hostingLeaseMs: Math.round(seconds(env, 'HOSTING_LEASE_SECONDS', 10, 1, 300) * 1000),
    pushPollMs: Math.round(seconds(env, 'BUILD_ON_PUSH_INTERVAL_SECONDS', 60, 0.1, 86_400) * 1000),
    drainMs: integer(env, 'DRAIN_SECONDS', 10, 0, 3600) * 1000,
    deploymentDataPrefix: namespacedPrefix(
      env,
      'DEPLOYMENT_DATA_PREFIX',
      /^[A-Za-z0-9_.-]{1,64}$/,
      'deployment',
      '1-64 letters, digits, "_", "." or "-"',
    ),
    publicUrl: publicUrl(env),
    deploymentsDomain: deploymentsDomain(env),
    routesPrefix: routesPrefixSetting(env),
    edgePort: integer(env, 'PORT', 8080, 0, 65535),
    sandbox: oneOf(env, 'SANDBOX', ['auto', 'bwrap', 'off'], 'auto'),
    sandboxNetwork: oneOf(env, 'SANDBOX_NETWORK', ['auto', 'pasta', 'none', 'host'], 'auto'),
    sandboxNetworkAllow: sandboxNetworkAllow(env),
    trustAllTenants: oneOf(env, 'TRUST_ALL_TENANTS', ['0', '1'], '0') === '1',
    maxDeploymentsPerTenant: integer(env, 'MAX_DEPLOYMENTS_PER_TENANT', 20, 1, 1_000_000),
    deploymentsDatabaseUri: postgresUri(env, 'DEPLOYMENTS_DATABASE_URI'),
    deploymentDatabasePoolSize: integer(env, 'DEPLOYMENT_DATABASE_POOL_SIZE', DEFAULT_DATABASE_POOL_SIZE, 1, 100),
    revisionRedis: Object.freeze({
      maxConnections: integer(env, 'DEPLOYMENT_REDIS_CONNECTIONS', 16, 1, 10_000),
      idleMs: Math.round(seconds(env, 'DEPLOYMENT_REDIS_IDLE_SECONDS', 300, 1, 86_400) * 1000),
      maxRequestBytes: integer(env, 'DEPLOYMENT_REDIS_MAX_REQUEST_MB', 16, 1, 512) * 1024 * 1024,
      maxBytes: integer(env, 'DEPLOYMENT_REDIS_MAX_MB', 256, 1, 1_048_576) * 1024 * 1024,
      measureMs: Math.round(seconds(env, 'DEPLOYMENT_REDIS_MEASURE_SECONDS', 30, 0.1, 3600) * 1000),
    }),
    revisionAgentServer: Object.freeze({ ttlSweepMs: ttlSweepMs(env), webhookHostsAllowed: webhookHostsAllowed(env) }),
    revisionHost: loadRevisionHostSettings(env),
  });
}

function sandboxNetworkAllow(env: Env): string[] {
  return list(env, 'SANDBOX_NETWORK_ALLOW').map((entry) => {
    const cidr = parseCidr(entry);
    if (cidr === null)
      throw new SettingsError('SANDBOX_NETWORK_ALLOW', `must be IPv4 CIDRs (10.1.2.0/24), got "${entry}"`);
    return cidr;
  });
}

/** DEPLOYMENT_MEMORY_MB and MAX_MEMORY_MB; the default has to fit under the maximum. */
function memorySettings(env: Env): { deploymentMemoryMb: number; maxMemoryMb: number } {
  const hostQuarter = Math.max(64, Math.floor(totalmem() / 4 / 1024 / 1024));
  const maxMemoryMb = integer(env, 'MAX_MEMORY_MB', hostQuarter, 64, 1_048_576);
  const deploymentMemoryMb = integer(env, 'DEPLOYMENT_MEMORY_MB', Math.min(512, maxMemoryMb), 64, 65_536);
  if (deploymentMemoryMb > maxMemoryMb)
    throw new SettingsError(
      'DEPLOYMENT_MEMORY_MB',
      `must be at most MAX_MEMORY_MB (${maxMemoryMb}), got ${deploymentMemoryMb}`,
    );
  return { deploymentMemoryMb, maxMemoryMb };
}

/** A number of CPUs (CFS quota), e.g. `0.5` or `2`. */
function cpus(env: Env, name: string, fallback: number): number {
  const v = text(env, name, String(fallback));
  const n = /^\d+(\.\d+)?$/.test(v) ? Number(v) : NaN;
  if (!(n >= 0.01 && n <= 1024)) throw new SettingsError(name, `must be a number of CPUs 0.01-1024, got "${v}"`);
  return n;
}

function repoHostsAllowed(env: Env): string[] {
  const entries = list(env, 'REPO_HOSTS_ALLOWED');
  try {
    checkAllowedHosts(entries);
  } catch (err) {
    throw new SettingsError('REPO_HOSTS_ALLOWED', (err as Error).message);
  }
  return entries;
}

/** A postgres:// or postgresql:// URL, or null when unset; its password is never repeated in the error. */
function postgresUri(env: Env, name: string): string | null {
  const v = text(env, name, '');
  if (v === '') return null;
  let url: URL | null = null;
  try {
    url = new URL(v);
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:'))
    throw new SettingsError(name, 'must be a postgresql://user:password@host:port/database URL');
  return v;
}

function secretsKey(env: Env): Buffer | null {
  const v = text(env, 'SECRETS_KEY', '');
  if (v === '') return null;
  const key = /^[A-Za-z0-9+/_-]+={0,2}$/.test(v) ? Buffer.from(v, 'base64') : Buffer.alloc(0);
  if (key.length !== 32)
    throw new SettingsError('SECRETS_KEY', 'must be 32 bytes in base64 (e.g. `openssl rand -base64 32`)');
  return key;
}
