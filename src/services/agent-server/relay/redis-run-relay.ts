import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Frame } from '../runs/frames.ts';
import { RETAINED_MS } from '../runs/frame-retention.ts';
import type { FollowOptions, RelayedCancel, RunRelay } from './run-relay.ts';

/** Frames a run's stream keeps (about: `MAXLEN ~`), as many as a run holds in memory (frame-retention.ts). */
const STREAM_FRAMES = 10_000;
/** How long a run's stream lives without a frame (refreshed as frames come): a server that died leaves no key forever. */
const IDLE_TTL_MS = 10 * 60_000;
/** The expiry is refreshed every this many frames (not at each: one command per frame, not two). */
const REFRESH_EVERY = 256;
/** How long a reader blocks on a quiet run before asking the store whether the run still goes on. */
const BLOCK_MS = 2000;
/** Frames read at once: a slow reader holds at most this many (the next batch is read when it has taken these). */
const BATCH = 256;
/** The entry after a run's last frame: frame `n` is entry `1-n`, so this one sorts after every frame. */
const END_ID = '2-0';

/**
 * The relay of servers sharing one store, over Redis (only what is ephemeral goes there):
 * - each run's frames go to a Stream of its own, `<prefix>:relay:run:<run id>`, entry `1-<n>` for frame `n` (its SSE
 *   id), `2-0` when the run ends; bounded (`MAXLEN ~` STREAM_FRAMES) and expiring RETAINED_MS after the run's end.
 *   A server where the run does not go on follows it with XREAD BLOCK from the entry after the reader's
 *   `Last-Event-ID`, one batch at a time, on a connection of the reader's own;
 * - cancels go through PUBLISH on `<prefix>:relay:cancel`, which every server SUBSCRIBEs to: the run's server cancels
 *   it at once (the `cancel:<id>` lease stays the fallback if a message is lost);
 * - the runs going on anywhere are the fields of the hash `<prefix>:relay:live`, which every server's sweep reads to
 *   settle the runs of a server that died (runs/orphan-sweep.ts).
 * Every key and channel is under the prefix: a deployment's Redis user (restricted to its prefix) reaches all of them.
 */
export class RedisRunRelay implements RunRelay {
  readonly shared = true;
  private subscriber: Redis | null = null;
  private readonly readers = new Set<Redis>();
  private warned = false;

  constructor(
    private readonly redis: Redis,
    private readonly options: { readonly prefix: string; readonly log?: Logger },
  ) {}

  private runKey(runId: string): string {
    return `${this.options.prefix}:relay:run:${runId}`;
  }

  private get liveKey(): string {
    return `${this.options.prefix}:relay:live`;
  }

  private get cancelChannel(): string {
    return `${this.options.prefix}:relay:cancel`;
  }

  started(runId: string, threadId: string): void {
    this.redis.hset(this.liveKey, runId, threadId).catch((err) => this.failed(err));
  }

  publish(runId: string, frame: Frame): void {
    const key = this.runKey(runId);
    const n = Number(frame.id ?? 0);
    this.redis
      .xadd(key, 'MAXLEN', '~', STREAM_FRAMES, `1-${n}`, 'e', frame.event, 'd', frame.data)
      .catch((err) => this.failed(err));
    if (n % REFRESH_EVERY === 0) this.redis.pexpire(key, IDLE_TTL_MS).catch((err) => this.failed(err));
  }

  ended(runId: string): void {
    const key = this.runKey(runId);
    this.redis
      .multi()
      .xadd(key, END_ID, 'end', '1')
      .pexpire(key, RETAINED_MS)
      .hdel(this.liveKey, runId)
      .exec()
      .catch((err) => this.failed(err));
  }

  follow(runId: string, options: FollowOptions): AsyncIterable<Frame> {
    return this.read(this.runKey(runId), options);
  }

  private async *read(key: string, { seen, signal, stillGoing }: FollowOptions): AsyncGenerator<Frame> {
    const conn = this.redis.duplicate(); // XREAD BLOCK holds its connection: one per reader
    this.readers.add(conn);
    const stop = () => conn.disconnect();
    signal.addEventListener('abort', stop, { once: true });
    try {
      let cursor = seen === undefined ? await this.lastEntry(conn, key) : seen === 0 ? '0-0' : `1-${seen - 1}`;
      while (cursor !== END_ID && !signal.aborted) {
        const got = await conn.xread('COUNT', BATCH, 'BLOCK', BLOCK_MS, 'STREAMS', key, cursor);
        if (got === null || got.length === 0) {
          if (!(await stillGoing())) return;
          continue;
        }
        for (const [id, fields] of got[0]![1]) {
          cursor = id;
          if (id === END_ID) return;
          const f = fieldsOf(fields);
          yield { event: f.e ?? 'error', data: f.d ?? 'null', id: id.slice(2) };
        }
      }
    } catch (err) {
      if (!signal.aborted) throw err;
    } finally {
      signal.removeEventListener('abort', stop);
      this.readers.delete(conn);
      conn.disconnect();
    }
  }

  /** Where a reader from now starts: after the stream's last entry (END_ID if the run has ended; the start if none). */
  private async lastEntry(conn: Redis, key: string): Promise<string> {
    const last = await conn.xrevrange(key, '+', '-', 'COUNT', 1);
    return last[0]?.[0] ?? '0-0';
  }

  async cancel(runId: string, reason: RelayedCancel): Promise<void> {
    await this.redis.publish(this.cancelChannel, JSON.stringify({ run_id: runId, reason }));
  }

  onCancel(handler: (runId: string, reason: RelayedCancel) => void): void {
    if (this.subscriber !== null) throw new Error('the relay has a cancel handler already');
    const subscriber = (this.subscriber = this.redis.duplicate());
    subscriber.on('message', (channel: string, message: string) => {
      if (channel !== this.cancelChannel) return;
      try {
        const { run_id, reason } = JSON.parse(message) as { run_id: unknown; reason: unknown };
        if (typeof run_id === 'string' && (reason === 'cancel' || reason === 'cancel-rollback'))
          handler(run_id, reason);
      } catch {
        // not a message of ours
      }
    });
    subscriber.subscribe(this.cancelChannel).catch((err) => this.failed(err));
  }

  async live(): Promise<string[]> {
    return this.redis.hkeys(this.liveKey);
  }

  async forget(runId: string): Promise<void> {
    await this.redis.hdel(this.liveKey, runId);
  }

  async close(): Promise<void> {
    for (const reader of this.readers) reader.disconnect();
    this.readers.clear();
    this.subscriber?.disconnect();
    this.subscriber = null;
  }

  /** A relay command failed (Redis away): the run goes on here; readers elsewhere may miss frames. Said once. */
  private failed(err: unknown): void {
    if (this.warned) return;
    this.warned = true;
    this.options.log?.warn({ err: (err as Error)?.message }, 'the run relay could not reach Redis');
  }
}

function fieldsOf(list: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < list.length; i += 2) out[list[i]!] = list[i + 1]!;
  return out;
}
