import { MemorySaver, type BaseCheckpointSaver } from '@langchain/langgraph';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { SettingsError } from '../../../settings/env.ts';
import { LocalRunRelay } from '../relay/local-run-relay.ts';
import { RedisRunRelay } from '../relay/redis-run-relay.ts';
import type { RunRelay } from '../relay/run-relay.ts';
import type { AgentStore } from './agent-store.ts';
import type { CountedItemStore } from './item-quota.ts';
import { MemoryAgentStore } from './memory-agent-store.ts';
import { MemoryItemStore } from './memory-item-store.ts';
import { openPostgresStorage } from './postgres/open-postgres.ts';
import { RedisAgentStore } from './redis-agent-store.ts';
import { RedisCheckpointer } from './redis-checkpointer.ts';
import { RedisItemStore } from './redis-item-store.ts';

/**
 * Where an Agent Server keeps its records, its graph state and its store items, and how it reaches the other servers
 * of its deployment: what createAgentServer takes.
 */
export interface AgentStorage {
  readonly store: AgentStore;
  readonly checkpointer: BaseCheckpointSaver;
  readonly items: CountedItemStore;
  /** With a Redis, the run relay over it (runs followed, resumed and cancelled from any server); else in-process. */
  readonly relay: RunRelay;
  /** Lets go of what was opened (the server's own close does it too, through its store): for a start that failed. */
  close(): Promise<void>;
}

export interface StorageChoice {
  /** DATABASE_URI and DATABASE_POOL_SIZE: everything durable in PostgreSQL. */
  readonly database: { readonly uri: string; readonly poolSize: number } | null;
  /**
   * The Redis (REDIS_URL, or a deployment's socket), made when asked for: what is ephemeral goes through it (the run
   * relay), and without a database the records too; null for none.
   */
  readonly redis: (() => Redis | null) | null;
  /** Prefix of the Redis keys (AGENT_STORE_PREFIX, or a deployment's own). */
  readonly redisPrefix: string;
  readonly log: Logger;
}

/**
 * The Agent Server's storage as its settings choose it, for every place that starts one (the gateway's bundled
 * server, a deployment's process, the server run alone):
 *
 * - DATABASE_URI: PostgreSQL. Records, store items and checkpoints (PostgresSaver) in that database, migrated at start.
 *   A database not reachable at start is a SettingsError naming DATABASE_URI.
 * - else a Redis (REDIS_URL): the Redis store and checkpointer. As durable as that Redis's persistence (append-only on
 *   in the shipped compose file); for development and small setups.
 * - else memory: nothing outlives the process.
 *
 * With a Redis, whatever keeps the records, runs' events, cancels and thread turns go through it (relay/), so every
 * server of a deployment follows every run.
 */
export async function openAgentStorage(choice: StorageChoice): Promise<AgentStorage> {
  const client = choice.redis?.() ?? null;
  const records = await openRecords(choice, client);
  const relay = client
    ? new RedisRunRelay(client, { prefix: choice.redisPrefix, log: choice.log })
    : new LocalRunRelay();
  return {
    ...records,
    relay,
    close: async () => {
      await relay.close();
      await records.close();
    },
  };
}

async function openRecords(
  { database, redisPrefix, log }: StorageChoice,
  client: Redis | null,
): Promise<Omit<AgentStorage, 'relay'>> {
  if (database !== null) {
    try {
      return await openPostgresStorage({ uri: database.uri, poolSize: database.poolSize, log });
    } catch (err) {
      throw new SettingsError(
        'DATABASE_URI',
        `the Agent Server keeps its data in PostgreSQL and could not open ${redactedUri(database.uri)} at start (${(err as Error).message.split('\n')[0]})`,
      );
    }
  }
  if (client !== null) {
    const store = new RedisAgentStore(client, { prefix: redisPrefix });
    return {
      store,
      checkpointer: new RedisCheckpointer(client, { prefix: redisPrefix }),
      items: new RedisItemStore(client, { prefix: redisPrefix }),
      close: () => store.close(),
    };
  }
  return {
    store: new MemoryAgentStore(),
    checkpointer: new MemorySaver(),
    items: new MemoryItemStore(),
    close: async () => {},
  };
}

/** A database URI without its password, to name in an error or a log. */
export function redactedUri(uri: string): string {
  try {
    const url = new URL(uri);
    if (url.password !== '') url.password = '***';
    return url.href;
  } catch {
    return 'DATABASE_URI';
  }
}
