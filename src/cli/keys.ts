import type { Redis } from 'ioredis';
import { RedisKeyRegistry } from '../keys/redis-registry.ts';
import { KeyRegistryError, type KeyRegistry } from '../keys/types.ts';
import { closeRedis, createRedisClient } from '../redis-client.ts';
import { SettingsError } from '../settings/env.ts';
import { loadKeyRegistrySettings } from '../settings/key-registry.ts';
import type { Output } from '../process/output.ts';
import { commandArgs, USAGE_EXIT_CODE, UsageError } from './args.ts';

export const KEYS_USAGE = `usage: gateway keys create --org <organisation> --workspace <workspace> [--json]

  Creates an API key of <organisation> (which then owns <workspace>) and
  prints it once: only its SHA-256 hash is stored. Needs REDIS_URL (the
  registry the gateway uses; API_KEYS_PREFIX, default "keys", under REDIS_PREFIX when set).
  stdout: the key alone (or one JSON object with --json); stderr: what was done.
  Exit 0 created, 1 the workspace belongs to another organisation, 2 usage, settings or registry unreachable.
`;

/**
 * `gateway keys ...`. The registry is opened from the environment (or given,
 * for tests and for a caller that already holds one); returns the exit status.
 */
export async function keysCommand(
  args: readonly string[],
  out: Output,
  { env = process.env, registry }: { env?: NodeJS.ProcessEnv; registry?: KeyRegistry } = {},
): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'create') {
    const asked = sub === 'help' || sub === '--help' || sub === '-h';
    if (asked || sub === undefined) out.log(KEYS_USAGE);
    else out.err(`gateway keys: unknown command "${sub}" (see gateway keys --help)`);
    return asked ? 0 : USAGE_EXIT_CODE;
  }
  let values: { org?: string; workspace?: string; json?: boolean; help?: boolean };
  try {
    ({ values } = commandArgs(
      'keys create',
      rest,
      { org: { type: 'string' }, workspace: { type: 'string' }, json: { type: 'boolean', default: false } },
      false,
    ));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    out.err(`gateway keys create: ${err.message} (${err.hint})`);
    return USAGE_EXIT_CODE;
  }
  if (values.help) {
    out.log(KEYS_USAGE);
    return 0;
  }
  if (!values.org || !values.workspace) {
    out.err(`gateway keys create: --org and --workspace are required\n\n${KEYS_USAGE}`);
    return 2;
  }

  let owned: { registry: KeyRegistry; client: Redis } | null = null;
  try {
    if (registry === undefined) {
      const settings = loadKeyRegistrySettings(env);
      if (settings.warning !== null) out.err(`gateway keys create: ${settings.warning}`);
      if (settings.redisUrl === null) {
        out.err(
          'gateway keys create: REDIS_URL is not set. Without it the registry lives inside the running gateway (its development key is printed at start); set REDIS_URL to the Redis the gateway uses.',
        );
        return 2;
      }
      // One short attempt: a command-line tool reports an unreachable registry rather than waiting for it.
      const client = createRedisClient(settings.redisUrl, {
        retriesPerRequest: 1,
        connectTimeoutMs: 5000,
        lazyConnect: true,
        onError: () => {}, // reported by the command that fails
      });
      await client.connect();
      owned = { registry: new RedisKeyRegistry(client, { prefix: settings.prefix }), client };
    }
    const reg = registry ?? owned!.registry;
    await reg.addWorkspace(values.org, values.workspace);
    const { key, record } = await reg.createKey(values.org);
    if (values.json)
      out.log(
        JSON.stringify({
          key,
          id: record.id,
          org: values.org,
          workspace: values.workspace,
          created_at: record.createdAt,
        }),
      );
    else out.log(key);
    out.err(
      `created key ${record.id} of organisation "${values.org}" (workspace "${values.workspace}"); it is shown once, only its hash is stored`,
    );
    return 0;
  } catch (err) {
    if (err instanceof KeyRegistryError) {
      out.err(`gateway keys create: ${err.message}`);
      return err.code === 'workspace_taken' ? 1 : 2;
    }
    if (err instanceof SettingsError) {
      out.err(`gateway keys create: ${err.message}`);
      return 2;
    }
    out.err(`gateway keys create: cannot reach the key registry: ${(err as Error).message}`);
    return 2;
  } finally {
    if (owned) await closeRedis(owned.client);
  }
}
