import type { KeyRegistry } from '../keys/types.ts';
import { SettingsError } from '../settings/env.ts';
import { loadKeyRegistrySettings } from '../settings/key-registry.ts';
import type { Output } from '../process/output.ts';
import { commandArgs, USAGE_EXIT_CODE, UsageError } from './args.ts';
import { adminBackend, KeysFailure, redisBackend, registryBackend, type KeysBackend } from './keys-backend.ts';

export const KEYS_USAGE = `usage: gateway keys create --org <organisation> --workspace <workspace> [--json] [--admin-url <url>]
       gateway keys list [--org <organisation>] [--json] [--admin-url <url>]
       gateway keys revoke <key id> [--admin-url <url>]

  create  makes an API key of <organisation> (which then owns <workspace>) and
          prints it once: only its SHA-256 hash is stored.
  list    the keys by id, organisation and creation time (never a key itself).
  revoke  removes the key with that id (from "list" or "create"): refused from then on.

  Where: with --admin-url, or without REDIS_URL, a running gateway's admin
  listener (default http://127.0.0.1:$ADMIN_PORT, 9090), on any store: it needs
  ADMIN_TOKEN, the operator token the gateway was started with, in the
  environment. Else, with REDIS_URL, the registry in Redis itself
  (API_KEYS_PREFIX, default "keys", under REDIS_PREFIX when set).
  stdout: the key / the list (one JSON document with --json); stderr: what was done.
  Exit 0 done, 1 refused (the workspace belongs to another organisation, no key has that id),
  2 usage, settings, or the registry or gateway unreachable.
`;

const OPTIONS = {
  org: { type: 'string' },
  workspace: { type: 'string' },
  json: { type: 'boolean', default: false },
  'admin-url': { type: 'string' },
} as const;

/**
 * `gateway keys ...`. The registry is reached from the environment (or given, for tests and for a caller that
 * already holds one); returns the exit status.
 */
export async function keysCommand(
  args: readonly string[],
  out: Output,
  { env = process.env, registry }: { env?: NodeJS.ProcessEnv; registry?: KeyRegistry } = {},
): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'create' && sub !== 'list' && sub !== 'revoke') {
    const asked = sub === 'help' || sub === '--help' || sub === '-h';
    if (asked || sub === undefined) out.log(KEYS_USAGE);
    else out.err(`gateway keys: unknown command "${sub}" (see gateway keys --help)`);
    return asked ? 0 : USAGE_EXIT_CODE;
  }
  const name = `gateway keys ${sub}`;
  let parsed;
  try {
    parsed = commandArgs(`keys ${sub}`, rest, OPTIONS, sub === 'revoke');
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    out.err(`${name}: ${err.message} (${err.hint})`);
    return USAGE_EXIT_CODE;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    out.log(KEYS_USAGE);
    return 0;
  }
  if (sub === 'create' && (!values.org || !values.workspace)) {
    out.err(`${name}: --org and --workspace are required\n\n${KEYS_USAGE}`);
    return USAGE_EXIT_CODE;
  }
  if (sub === 'revoke' && positionals.length !== 1) {
    out.err(`${name}: expected one key id (see gateway keys list)`);
    return USAGE_EXIT_CODE;
  }

  let backend: KeysBackend | null = null;
  try {
    backend = registry
      ? registryBackend(registry, `the ${registry.kind} registry`)
      : await backendFrom(env, values['admin-url'], (line) => out.err(`${name}: ${line}`));
    if (sub === 'create') {
      const made = await backend.create(values.org!, values.workspace!);
      out.log(values.json ? JSON.stringify(made) : made.key);
      out.err(
        `created key ${made.id} of organisation "${made.org}" (workspace "${made.workspace}") in ${backend.where}; it is shown once, only its hash is stored`,
      );
    } else if (sub === 'list') {
      const keys = await backend.list(values.org || undefined);
      if (values.json) out.log(JSON.stringify({ keys }));
      else for (const k of keys) out.log(`${k.id}  ${k.org}  ${k.created_at}`);
      out.err(`${keys.length} key(s)${values.org ? ` of organisation "${values.org}"` : ''} in ${backend.where}`);
    } else {
      const gone = await backend.revoke(positionals[0]!);
      out.err(`revoked key ${gone.id} of organisation "${gone.org}" in ${backend.where}`);
    }
    return 0;
  } catch (err) {
    if (err instanceof KeysFailure) {
      out.err(`${name}: ${err.message}`);
      return err.exitCode;
    }
    if (err instanceof SettingsError) {
      out.err(`${name}: ${err.message}`);
      return USAGE_EXIT_CODE;
    }
    out.err(`${name}: cannot reach the key registry: ${(err as Error).message}`);
    return USAGE_EXIT_CODE;
  } finally {
    await backend?.close();
  }
}

/** --admin-url (or no REDIS_URL): the running gateway's admin listener; else the registry in Redis. */
async function backendFrom(
  env: NodeJS.ProcessEnv,
  adminUrl: string | undefined,
  warn: (line: string) => void,
): Promise<KeysBackend> {
  const settings = loadKeyRegistrySettings(env);
  if (settings.warning !== null) warn(settings.warning);
  if (adminUrl === undefined && settings.redisUrl !== null) return redisBackend(settings.redisUrl, settings.prefix);
  const url = adminUrl ?? `http://127.0.0.1:${env.ADMIN_PORT || 9090}`;
  if (!/^https?:\/\/[^/]/.test(url)) throw new KeysFailure(`--admin-url must be an http(s) URL, got "${url}"`, 2);
  const token = env.ADMIN_TOKEN ?? '';
  if (token === '')
    throw new KeysFailure(
      adminUrl === undefined
        ? 'REDIS_URL is not set and neither is ADMIN_TOKEN: start the gateway with ADMIN_TOKEN=<a secret> and run this with the same ADMIN_TOKEN (it asks the admin listener, default http://127.0.0.1:9090, or --admin-url), or set REDIS_URL to the Redis the gateway uses'
        : 'ADMIN_TOKEN is not set: the admin listener manages keys only for the operator token the gateway was started with',
      2,
    );
  return adminBackend(url, token);
}
