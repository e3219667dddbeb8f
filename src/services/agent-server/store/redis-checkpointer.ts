import type { RunnableConfig } from '@langchain/core/runnables';
import {
  BaseCheckpointSaver,
  TASKS,
  WRITES_IDX_MAP,
  compareWritesSortKeys,
  copyCheckpoint,
  getCheckpointId,
  maxChannelVersion,
  writesSortKey,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from '@langchain/langgraph-checkpoint';
import type { Redis } from 'ioredis';
import { measureRedisThread } from './redis-checkpoint-storage.ts';
import type { ThreadStorage } from './storage-tally.ts';

/**
 * A LangGraph checkpointer in plain Redis, with MemorySaver's semantics
 * (getTuple / list / put / putWrites / deleteThread), so a thread's state
 * outlives the process. Values go through `this.serde` and are kept as
 * `[type, base64]`. Keys, under `<prefix>:cp:`, where `<t>` is the
 * thread id and `<tn>` is `JSON.stringify([thread, namespace])`:
 *
 *   threads          set of thread ids holding checkpoints
 *   ns:<t>           set of the thread's checkpoint namespaces
 *   ids:<tn>         sorted set (all scores 0, so lexicographic) of checkpoint ids
 *   ckpt:<tn>        hash checkpoint id → JSON {checkpoint, metadata, parent}
 *   writes:<tn>:<id> hash `<task id>,<idx>` → JSON [task id, channel, value, task path]
 *   wkeys:<t>        set of the thread's `writes:` keys (for deleteThread)
 *
 * Checkpoint ids are uuid6, which sort by time as strings: the newest is
 * the last of `ids:`.
 */
export interface RedisCheckpointerOptions {
  /** Key prefix; default `agent` (the checkpointer's keys sit under `<prefix>:cp:`). */
  readonly prefix?: string;
  readonly serde?: SerializerProtocol;
}

type Serialized = [type: string, base64: string];
interface StoredCheckpoint {
  readonly checkpoint: Serialized;
  readonly metadata: Serialized;
  readonly parent: string | null;
}
type StoredWrite = [taskId: string, channel: string, value: Serialized, taskPath: string];

export class RedisCheckpointer extends BaseCheckpointSaver {
  private readonly base: string;

  constructor(
    private readonly client: Redis,
    { prefix = 'agent', serde }: RedisCheckpointerOptions = {},
  ) {
    super(serde);
    this.base = `${prefix}:cp:`;
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = config.configurable?.thread_id as string | undefined;
    const ns = (config.configurable?.checkpoint_ns as string | undefined) ?? '';
    if (threadId === undefined) return undefined;
    const tn = this.tn(threadId, ns);
    let checkpointId: string | undefined = getCheckpointId(config) || undefined;
    let answerConfig = config;
    if (checkpointId === undefined) {
      [checkpointId] = await this.client.zrevrange(this.k(`ids:${tn}`), 0, 0);
      if (checkpointId === undefined) return undefined;
      answerConfig = { configurable: { thread_id: threadId, checkpoint_id: checkpointId, checkpoint_ns: ns } };
    }
    const raw = await this.client.hget(this.k(`ckpt:${tn}`), checkpointId);
    if (raw === null) return undefined;
    return this.tuple(threadId, ns, checkpointId, JSON.parse(raw) as StoredCheckpoint, answerConfig);
  }

  async *list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    let { limit } = options ?? {};
    const { before, filter } = options ?? {};
    const wantedThread = config.configurable?.thread_id as string | undefined;
    const wantedNs = config.configurable?.checkpoint_ns as string | undefined;
    const wantedId = config.configurable?.checkpoint_id as string | undefined;
    const beforeId = before?.configurable?.checkpoint_id as string | undefined;
    const threadIds = wantedThread ? [wantedThread] : (await this.client.smembers(this.k('threads'))).sort();
    for (const threadId of threadIds) {
      const namespaces = (await this.client.smembers(this.k(`ns:${threadId}`))).sort();
      for (const ns of namespaces) {
        if (wantedNs !== undefined && ns !== wantedNs) continue;
        const tn = this.tn(threadId, ns);
        const ids = await this.client.zrevrangebylex(this.k(`ids:${tn}`), beforeId ? `(${beforeId}` : '+', '-');
        for (const checkpointId of ids) {
          if (wantedId && checkpointId !== wantedId) continue;
          const raw = await this.client.hget(this.k(`ckpt:${tn}`), checkpointId);
          if (raw === null) continue;
          const stored = JSON.parse(raw) as StoredCheckpoint;
          const metadata = (await this.load(stored.metadata)) as Record<string, unknown>;
          if (filter && !Object.entries(filter).every(([key, value]) => metadata[key] === value)) continue;
          if (limit !== undefined) {
            if (limit <= 0) return;
            limit -= 1;
          }
          yield this.tuple(
            threadId,
            ns,
            checkpointId,
            stored,
            { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpointId } },
            metadata,
          );
        }
      }
    }
  }

  async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    _newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const threadId = config.configurable?.thread_id as unknown;
    const ns = (config.configurable?.checkpoint_ns as string | undefined) ?? '';
    if (typeof threadId !== 'string' || threadId === '')
      throw new Error('Failed to put checkpoint: the config has no "thread_id" in "configurable".');
    const [cp, md] = await Promise.all([this.dump(copyCheckpoint(checkpoint)), this.dump(metadata)]);
    const stored: StoredCheckpoint = {
      checkpoint: cp,
      metadata: md,
      parent: (config.configurable?.checkpoint_id as string | undefined) ?? null,
    };
    const tn = this.tn(threadId, ns);
    await this.client
      .multi()
      .hset(this.k(`ckpt:${tn}`), checkpoint.id, JSON.stringify(stored))
      .zadd(this.k(`ids:${tn}`), 0, checkpoint.id)
      .sadd(this.k(`ns:${threadId}`), ns)
      .sadd(this.k('threads'), threadId)
      .exec()
      .then(check);
    return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpoint.id } };
  }

  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    const threadId = config.configurable?.thread_id as unknown;
    const ns = (config.configurable?.checkpoint_ns as string | undefined) ?? '';
    const checkpointId = config.configurable?.checkpoint_id as unknown;
    if (typeof threadId !== 'string' || threadId === '')
      throw new Error('Failed to put writes: the config has no "thread_id" in "configurable".');
    if (typeof checkpointId !== 'string' || checkpointId === '')
      throw new Error('Failed to put writes: the config has no "checkpoint_id" in "configurable".');
    const key = this.k(`writes:${this.tn(threadId, ns)}:${checkpointId}`);
    const serialized = await Promise.all(writes.map(([, value]) => this.dump(value)));
    const tx = this.client.multi().sadd(this.k(`wkeys:${threadId}`), key);
    writes.forEach(([channel], i) => {
      const idx = WRITES_IDX_MAP[channel] || i;
      const field = `${taskId},${idx}`;
      const value = JSON.stringify([taskId, channel, serialized[i]!, taskPath ?? ''] satisfies StoredWrite);
      // Regular writes of a task are kept once (a retried task does not replace them); special channels (errors,
      // interrupts) are replaced.
      if (idx >= 0) tx.hsetnx(key, field, value);
      else tx.hset(key, field, value);
    });
    await tx.exec().then(check);
  }

  async deleteThread(threadId: string): Promise<void> {
    const namespaces = await this.client.smembers(this.k(`ns:${threadId}`));
    const writeKeys = await this.client.smembers(this.k(`wkeys:${threadId}`));
    const keys = [this.k(`ns:${threadId}`), this.k(`wkeys:${threadId}`), ...writeKeys];
    for (const ns of namespaces)
      keys.push(this.k(`ids:${this.tn(threadId, ns)}`), this.k(`ckpt:${this.tn(threadId, ns)}`));
    await this.client
      .multi()
      .unlink(...keys)
      .srem(this.k('threads'), threadId)
      .exec()
      .then(check);
  }

  /** What the thread's checkpoints occupy, as stored (`GET /threads/{id}/storage`). */
  storageOf(threadId: string): Promise<ThreadStorage> {
    return measureRedisThread(this.client, this.base, threadId);
  }

  private async tuple(
    threadId: string,
    ns: string,
    checkpointId: string,
    stored: StoredCheckpoint,
    config: RunnableConfig,
    metadata?: Record<string, unknown>,
  ): Promise<CheckpointTuple> {
    const checkpoint = (await this.load(stored.checkpoint)) as Checkpoint;
    if (checkpoint.v < 4 && stored.parent !== null)
      await this.migratePendingSends(checkpoint, threadId, ns, stored.parent);
    const pendingWrites: CheckpointPendingWrite[] = await Promise.all(
      (await this.orderedWrites(threadId, ns, checkpointId)).map(
        async ([taskId, channel, value]) => [taskId, channel, await this.load(value)] as CheckpointPendingWrite,
      ),
    );
    const tuple: CheckpointTuple = {
      config,
      checkpoint,
      metadata: (metadata ?? (await this.load(stored.metadata))) as CheckpointMetadata,
      pendingWrites,
    };
    if (stored.parent !== null)
      tuple.parentConfig = { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: stored.parent } };
    return tuple;
  }

  /** The writes stored for one checkpoint, in `writesSortKey` order (task path, task id, idx). */
  private async orderedWrites(threadId: string, ns: string, checkpointId: string): Promise<StoredWrite[]> {
    const all = await this.client.hgetall(this.k(`writes:${this.tn(threadId, ns)}:${checkpointId}`));
    const keyed = Object.entries(all).map(([field, raw]) => {
      const comma = field.lastIndexOf(',');
      const record = JSON.parse(raw) as StoredWrite;
      return { key: writesSortKey(record[3] ?? '', field.slice(0, comma), Number(field.slice(comma + 1))), record };
    });
    keyed.sort((a, b) => compareWritesSortKeys(a.key, b.key));
    return keyed.map(({ record }) => record);
  }

  /** Checkpoints older than v4 kept pending sends as writes of their parent (as MemorySaver does). */
  private async migratePendingSends(
    checkpoint: Checkpoint,
    threadId: string,
    ns: string,
    parentId: string,
  ): Promise<void> {
    const sends = await Promise.all(
      (await this.orderedWrites(threadId, ns, parentId))
        .filter(([, channel]) => channel === TASKS)
        .map(([, , value]) => this.load(value)),
    );
    const mutable = checkpoint as {
      channel_values: Record<string, unknown>;
      channel_versions: Record<string, number | string>;
    };
    mutable.channel_values ??= {};
    mutable.channel_values[TASKS] = sends;
    mutable.channel_versions ??= {};
    mutable.channel_versions[TASKS] =
      Object.keys(mutable.channel_versions).length > 0
        ? maxChannelVersion(...Object.values(mutable.channel_versions))
        : this.getNextVersion(undefined);
  }

  private async dump(value: unknown): Promise<Serialized> {
    const [type, bytes] = await this.serde.dumpsTyped(value);
    return [type, Buffer.from(bytes).toString('base64')];
  }

  private load([type, base64]: Serialized): Promise<unknown> {
    return this.serde.loadsTyped(type, new Uint8Array(Buffer.from(base64, 'base64')));
  }

  private tn(threadId: string, ns: string): string {
    return JSON.stringify([threadId, ns]);
  }

  private k(suffix: string): string {
    return this.base + suffix;
  }
}

function check(results: [Error | null, unknown][] | null): void {
  if (results === null) throw new Error('redis transaction aborted');
  for (const [err] of results) if (err) throw err;
}
