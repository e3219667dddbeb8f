/**
 * The settings toolkit of the three programs (gateway, control plane, Agent Server): typed readers of environment
 * variables. An unset or blank variable takes the given default; an invalid one throws a SettingsError naming it.
 */
export type Env = Readonly<Record<string, string | undefined>>;

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

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The trimmed value; the fallback when unset or blank. */
export function text(env: Env, name: string, fallback: string): string {
  const v = env[name]?.trim();
  return v === undefined || v === '' ? fallback : v;
}

/** Comma-separated, trimmed, blanks dropped. */
export function list(env: Env, name: string): string[] {
  return text(env, name, '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** Lower-cased, one of `values`. */
export function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const v = text(env, name, fallback).toLowerCase();
  if (!values.includes(v as T)) throw new SettingsError(name, `must be one of ${values.join(', ')}, got "${v}"`);
  return v as T;
}

/** A value `re` accepts; `what` completes "must be ..." in the error. */
export function matching(env: Env, name: string, re: RegExp, fallback: string, what: string): string {
  const v = text(env, name, fallback);
  if (!re.test(v)) throw new SettingsError(name, `must be ${what}, got "${v}"`);
  return v;
}

export function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const v = text(env, name, String(fallback));
  const n = /^\d+$/.test(v) ? Number(v) : NaN;
  if (!(n >= min && n <= max)) throw new SettingsError(name, `must be a whole number ${min}-${max}, got "${v}"`);
  return n;
}

export function port(env: Env, name: string, fallback: number): number {
  const v = text(env, name, String(fallback));
  const n = /^\d{1,5}$/.test(v) ? Number(v) : NaN;
  if (!(n >= 0 && n <= 65535)) throw new SettingsError(name, `must be a port number 0-65535, got "${v}"`);
  return n;
}

/** A plain (possibly fractional) number of seconds in [min, max]. */
export function seconds(env: Env, name: string, fallback: number, min: number, max: number): number {
  const v = text(env, name, String(fallback));
  const n = /^\d+(\.\d+)?$/.test(v) ? Number(v) : NaN;
  if (!(n >= min && n <= max)) throw new SettingsError(name, `must be a number of seconds ${min}-${max}, got "${v}"`);
  return n;
}

/**
 * A URL of one of `protocols`; null when unset. `placeholder` (e.g. `{id}`) may appear in it: it is replaced before
 * the check and kept in the value.
 */
export function optionalUrl(
  env: Env,
  name: string,
  protocols: readonly string[],
  { placeholder }: { placeholder?: string } = {},
): string | null {
  const v = text(env, name, '');
  if (v === '') return null;
  const checked = placeholder === undefined ? v : v.replace(placeholder, 'id');
  if (!URL.canParse(checked) || !protocols.includes(new URL(checked).protocol)) {
    throw new SettingsError(name, `must be a ${protocols.map((p) => p + '//').join(' or ')} URL, got "${v}"`);
  }
  return v;
}

/** `30s`, `500ms`, `2m`, or a plain number of seconds → milliseconds. */
export function duration(env: Env, name: string, fallbackMs: number): number {
  const v = text(env, name, '');
  if (v === '') return fallbackMs;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(v);
  if (!m) throw new SettingsError(name, `must be a duration such as 30s, 500ms or 2m, got "${v}"`);
  const ms = Number(m[1]) * (m[2] === 'ms' ? 1 : m[2] === 'm' ? 60_000 : 1000);
  if (!(ms >= 1)) throw new SettingsError(name, `must be at least 1ms, got "${v}"`);
  return ms;
}

/** `10485760`, `512KiB`, `10MiB`, `1GiB` (also KB/MB/GB, taken as binary) → bytes. */
export function bytes(env: Env, name: string, fallback: number): number {
  const v = text(env, name, '');
  if (v === '') return fallback;
  const m = /^(\d+)\s*(k|kb|kib|m|mb|mib|g|gb|gib)?$/i.exec(v);
  if (!m) throw new SettingsError(name, `must be a size such as 10MiB or 1048576, got "${v}"`);
  const unit = (m[2] ?? '').toLowerCase()[0];
  return Number(m[1]) * (unit === 'k' ? 1024 : unit === 'm' ? 1024 ** 2 : unit === 'g' ? 1024 ** 3 : 1);
}

/** NODE_ENV is not `production`. */
export function isDevelopment(env: Env): boolean {
  return text(env, 'NODE_ENV', 'development').toLowerCase() !== 'production';
}

/**
 * Which of a renamed variable's two names to read: the new one when set, else the old one (still honoured). `warning`
 * is the line to log once at start when the old name is in the environment, naming the variable to use.
 */
export function renamed(env: Env, name: string, oldName: string): { variable: string; warning: string | null } {
  const isSet = (n: string) => text(env, n, '') !== '';
  if (!isSet(oldName)) return { variable: name, warning: null };
  if (isSet(name))
    return { variable: name, warning: `${oldName} is deprecated and ignored (${name} is set): remove it` };
  return { variable: oldName, warning: `${oldName} is deprecated: use ${name} instead` };
}
