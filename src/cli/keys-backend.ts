import { adminCaller } from './admin-client.ts';
import type { Redis } from 'ioredis';
import { RedisKeyRegistry } from '../keys/redis-registry.ts';
import { KeyRegistryError, type KeyRegistry } from '../keys/types.ts';
import { closeRedis, createRedisClient } from '../redis-client.ts';

/**
 * Where `gateway keys` works: the admin listener of a running gateway (`/keys`, any store, the operator token), or,
 * with REDIS_URL, straight in the registry in Redis. Both answer the same shapes; a refusal is a KeysFailure with
 * the exit status it means.
 */
export interface ShownKey {
  readonly id: string;
  readonly org: string;
  readonly created_at: string;
}

export interface KeysBackend {
  /** Where it works, for messages ("the admin listener at http://…", "the registry in Redis (prefix …)"). */
  readonly where: string;
  create(org: string, workspace: string): Promise<ShownKey & { key: string; workspace: string }>;
  list(org?: string): Promise<ShownKey[]>;
  revoke(id: string): Promise<ShownKey>;
  close(): Promise<void>;
}

/** Exit 1: the registry refused (workspace of another organisation, no such key); 2: cannot ask it at all. */
export class KeysFailure extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2,
  ) {
    super(message);
    this.name = 'KeysFailure';
  }
}

export function registryBackend(registry: KeyRegistry, where: string, client: Redis | null = null): KeysBackend {
  const shown = (r: { id: string; org: string; createdAt: string }) => ({
    id: r.id,
    org: r.org,
    created_at: r.createdAt,
  });
  return {
    where,
    async create(org, workspace) {
      try {
        await registry.addWorkspace(org, workspace);
        const { key, record } = await registry.createKey(org);
        return { key, ...shown(record), workspace };
      } catch (err) {
        if (err instanceof KeyRegistryError) throw new KeysFailure(err.message, err.code === 'workspace_taken' ? 1 : 2);
        throw err;
      }
    },
    list: async (org) => (await registry.listKeys(org)).map(shown),
    async revoke(id) {
      const record = await registry.revokeKey(id);
      if (record === null) throw new KeysFailure(`no API key has id "${id}" (see gateway keys list)`, 1);
      return shown(record);
    },
    close: async () => {
      if (client) await closeRedis(client);
    },
  };
}

/** The registry in Redis, with one short connection attempt: a command-line tool reports an unreachable registry. */
export async function redisBackend(redisUrl: string, prefix: string): Promise<KeysBackend> {
  const client = createRedisClient(redisUrl, {
    retriesPerRequest: 1,
    connectTimeoutMs: 5000,
    lazyConnect: true,
    onError: () => {}, // reported by the command that fails
  });
  try {
    await client.connect();
  } catch (err) {
    await closeRedis(client);
    throw new KeysFailure(`cannot reach the key registry: ${(err as Error).message}`, 2);
  }
  return registryBackend(
    new RedisKeyRegistry(client, { prefix }),
    `the registry in Redis (prefix "${prefix}")`,
    client,
  );
}

/** A running gateway's admin listener (`/keys`), with `authorization: Bearer <token>`. */
export function adminBackend(adminUrl: string, token: string): KeysBackend {
  const base = adminUrl.replace(/\/+$/, '');
  const admin = adminCaller(
    base,
    token,
    (message, code) => new KeysFailure(message, code),
    (status) => (status === 409 || status === 404 ? 1 : 2),
  );
  const call = (method: string, path: string, body?: unknown) => admin(method, `/keys${path}`, body);
  return {
    where: `the admin listener at ${base}`,
    create: async (org, workspace) =>
      (await call('POST', '', { org, workspace })) as unknown as ShownKey & { key: string; workspace: string },
    list: async (org) =>
      ((await call('GET', org ? `?org=${encodeURIComponent(org)}` : '')) as { keys: ShownKey[] }).keys,
    revoke: async (id) => (await call('DELETE', `/${encodeURIComponent(id)}`)) as unknown as ShownKey,
    close: async () => {},
  };
}
