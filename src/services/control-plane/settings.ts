import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REGIONS, type Region } from '../../rules/load.ts';
import { SettingsError } from '../../settings.ts';

/**
 * Environment → the control plane's frozen settings, in the style of
 * src/settings.ts: an invalid value fails naming the variable.
 */
export interface ControlPlaneSettings {
  readonly region: Region;
  /** Redis for deployments, revisions and keys; null = in memory. */
  readonly redisUrl: string | null;
  /** Prefix of the store's Redis keys (`<prefix>:<region>:...`). */
  readonly storePrefix: string;
  /** Prefix of the key registry's Redis keys. */
  readonly keysPrefix: string;
  /** AES-256 key for secrets at rest; null = a key generated per process (development). */
  readonly secretsKey: Buffer | null;
  /** Delay per revision step, to reproduce the hosted ~15 minute build. */
  readonly buildDelayMs: number;
  readonly buildConcurrency: number;
  /** Where builds check sources out (`<workDir>/<region>/<deployment>/<revision>`). */
  readonly workDir: string;
  /** Budget of one git command (clone, ls-remote). */
  readonly gitTimeoutMs: number;
  /** Port of the service when it runs alone. */
  readonly port: number;
  readonly logLevel: string;
  /** NODE_ENV is not `production`: an empty key registry gets a development key on first start. */
  readonly development: boolean;
  /** LOCAL_REPOS: whether `repo_url` may name a path on this host (default: allowed in development only). */
  readonly localRepos: boolean;
  /** A deployment's `url` (`{id}` is replaced by its id); null = not shown. */
  readonly deploymentUrl: string | null;
}

type Env = Readonly<Record<string, string | undefined>>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const PREFIX = /^[A-Za-z0-9_.:-]{1,128}$/;

export function loadControlPlaneSettings(env: Env = process.env): ControlPlaneSettings {
  return Object.freeze({
    region: oneOf(env, 'REGION', REGIONS, 'us'),
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    storePrefix: prefix(env, 'CONTROL_PLANE_PREFIX', 'cp'),
    keysPrefix: prefix(env, 'KEYS_PREFIX', 'keys'),
    secretsKey: secretsKey(env),
    buildDelayMs: Math.round(seconds(env, 'BUILD_DELAY_SECONDS', 0) * 1000),
    buildConcurrency: integer(env, 'BUILD_CONCURRENCY', 2, 1, 64),
    workDir: text(env, 'BUILD_WORK_DIR', join(tmpdir(), 'gateway-builds')),
    gitTimeoutMs: Math.round(seconds(env, 'GIT_TIMEOUT_SECONDS', 60) * 1000) || 1,
    port: integer(env, 'CONTROL_PLANE_PORT', 8081, 0, 65535),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    development: isDevelopment(env),
    localRepos: oneOf(env, 'LOCAL_REPOS', ['allow', 'deny'], isDevelopment(env) ? 'allow' : 'deny') === 'allow',
    deploymentUrl: url(env, 'DEPLOYMENT_URL', ['http:', 'https:']),
  });
}

function isDevelopment(env: Env): boolean {
  return text(env, 'NODE_ENV', 'development').toLowerCase() !== 'production';
}

function secretsKey(env: Env): Buffer | null {
  const v = text(env, 'SECRETS_KEY', '');
  if (v === '') return null;
  const key = /^[A-Za-z0-9+/_-]+={0,2}$/.test(v) ? Buffer.from(v, 'base64') : Buffer.alloc(0);
  if (key.length !== 32)
    throw new SettingsError('SECRETS_KEY', 'must be 32 bytes in base64 (e.g. `openssl rand -base64 32`)');
  return key;
}

function seconds(env: Env, name: string, fallback: number): number {
  const v = text(env, name, String(fallback));
  const n = /^\d+(\.\d+)?$/.test(v) ? Number(v) : NaN;
  if (!(n >= 0 && n <= 86_400)) throw new SettingsError(name, `must be a number of seconds 0-86400, got "${v}"`);
  return n;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const v = text(env, name, String(fallback));
  const n = /^\d+$/.test(v) ? Number(v) : NaN;
  if (!(n >= min && n <= max)) throw new SettingsError(name, `must be a whole number ${min}-${max}, got "${v}"`);
  return n;
}

function url(env: Env, name: string, protocols: readonly string[]): string | null {
  const v = text(env, name, '');
  if (v === '') return null;
  if (!URL.canParse(v.replace('{id}', 'id')) || !protocols.includes(new URL(v.replace('{id}', 'id')).protocol)) {
    throw new SettingsError(name, `must be a ${protocols.map((p) => p + '//').join(' or ')} URL, got "${v}"`);
  }
  return v;
}

function prefix(env: Env, name: string, fallback: string): string {
  const v = text(env, name, fallback);
  if (!PREFIX.test(v)) throw new SettingsError(name, `must be 1-128 letters, digits, "_", ".", ":" or "-", got "${v}"`);
  return v;
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const v = text(env, name, fallback).toLowerCase();
  if (!values.includes(v as T)) throw new SettingsError(name, `must be one of ${values.join(', ')}, got "${v}"`);
  return v as T;
}

function text(env: Env, name: string, fallback: string): string {
  const v = env[name]?.trim();
  return v === undefined || v === '' ? fallback : v;
}
