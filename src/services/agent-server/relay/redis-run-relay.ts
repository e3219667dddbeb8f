import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Frame } from '../runs/frames.ts';
import { RETAINED_MS } from '../runs/frame-retention.ts';
import { LEASE_MS } from '../runs/run-leases.ts';
import type { FollowOptions, RelayedCancel, RunRelay } from './run-relay.ts';

/** Frames a run's stream keeps (about: `MAXLEN ~`), as many as a run holds in memory (frame-retention.ts). */
const STREAM_FRAMES = 10_000;
/** How long a run's stream lives without a frame (refreshed as frames come): a server that died leaves no key forever. */
const IDLE_TTL_MS = 10 * 60_000;
/** The expiry is refreshed every this many frames (not at each: one command per frame, not two). */
const REFRESH_EVERY = 256;
/** How long a reader blocks on a quiet run before asking the store whether the run still goes on. */
const BLOCK_MS = 2000;
/**
 * Readers of other servers' runs with a connection of their own (XREAD BLOCK); the next ones poll every POLL_MS on the
 * shared connection. A deployment's revision has DEPLOYMENT_REDIS_CONNECTIONS (16 by default) for everything.
 */
const MAX_BLOCKING_READERS = 8;
const POLL_MS = 100;
/** Frames read at once: a slow reader holds at most this many (the next batch is read when it has taken these). */
const BATCH = 256;
/** How often a server renews its threads' claims (each lasts LEASE_MS), and a waiter tries again unwoken. */
const CLAIM_RENEW_MS = LEASE_MS / 5;
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
 * - one server at a time runs a thread's runs: it claims `<prefix>:relay:thread:<thread id>` (SET NX PX LEASE_MS, its
 *   own id as the value), renews it while it has runs of the thread and releases it after the last, PUBLISHing the
 *   thread's id on `<prefix>:relay:free`, which wakes the runs of other servers waiting for the thread;
 * - the runs going on anywhere are the fields of the hash `<prefix>:relay:live`, which every server's sweep reads to
 *   settle the runs of a server that died (runs/orphan-sweep.ts).
 * Every key and channel is under the prefix: a deployment's Redis user (restricted to its prefix) reaches all of them.
 */
export class RedisRunRelay implements RunRelay {
  readonly shared = true;
  private subscriber: Redis | null = null;
  private readonly readers = new Set<Redis>();
  private warned = false;
  /** This server's id, the value of the thread claims it holds. */
  private readonly id = randomUUID();
  /** Threads this server has claimed (renewed every CLAIM_RENEW_MS). */
  private readonly claimed = new Set<string>();
  /** Waiters for a thread another server holds, woken when it is released. */
  private readonly waiting = new Map<string, Set<() => void>>();
  private renewer: NodeJS.Timeout | undefined;
  private cancelHandler: ((runId: string, reason: RelayedCancel) => void) | null = null;

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

  private get freeChannel(): string {
    return `${this.options.prefix}:relay:free`;
  }

  private threadKey(threadId: string): string {
    return `${this.options.prefix}:relay:thread:${threadId}`;
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
    const key = this.runKey(runId);
    const { seen } = options;
    // "From now" is now, as the reader asks, not when it first pulls (after its response's headers went out).
    const start = seen === undefined ? this.lastEntry(key) : Promise.resolve(seen === 0 ? '0-0' : `1-${seen - 1}`);
    start.catch(() => undefined); // read (and thrown) by the reader
    return this.read(key, start, options);
  }

  private async *read(
    key: string,
    start: Promise<string>,
    { signal, stillGoing }: FollowOptions,
  ): AsyncGenerator<Frame> {
    // XREAD BLOCK holds its connection: one per reader, up to MAX_BLOCKING_READERS; the readers beyond poll on the
    // shared connection (no BLOCK) every POLL_MS, so a revision's few Redis connections are never all readers'.
    const conn = this.readers.size < MAX_BLOCKING_READERS ? this.redis.duplicate() : null;
    if (conn !== null) this.readers.add(conn);
    const stop = () => conn?.disconnect();
    signal.addEventListener('abort', stop, { once: true });
    try {
      let cursor = await start;
      let quiet = 0;
      while (cursor !== END_ID && !signal.aborted) {
        const got =
          conn !== null
            ? await conn.xread('COUNT', BATCH, 'BLOCK', BLOCK_MS, 'STREAMS', key, cursor)
            : await this.redis.xread('COUNT', BATCH, 'STREAMS', key, cursor);
        if (got === null || got.length === 0) {
          if (conn === null) {
            await new Promise((resolve) => setTimeout(resolve, POLL_MS));
            if ((quiet += POLL_MS) < BLOCK_MS) continue;
          }
          quiet = 0;
          if (!(await stillGoing())) return;
          continue;
        }
        quiet = 0;
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
      if (conn !== null) {
        this.readers.delete(conn);
        conn.disconnect();
      }
    }
  }

  /** Where a reader from now starts: after the stream's last entry (END_ID if the run has ended; the start if none). */
  private async lastEntry(key: string): Promise<string> {
    const last = await this.redis.xrevrange(key, '+', '-', 'COUNT', 1);
    return last[0]?.[0] ?? '0-0';
  }

  async cancel(runId: string, reason: RelayedCancel): Promise<void> {
    await this.redis.publish(this.cancelChannel, JSON.stringify({ run_id: runId, reason }));
  }

  onCancel(handler: (runId: string, reason: RelayedCancel) => void): void {
    if (this.cancelHandler !== null) throw new Error('the relay has a cancel handler already');
    this.cancelHandler = handler;
    this.subscribe();
  }

  /** One subscribed connection for the cancels and the threads released, made at the first need. */
  private subscribe(): void {
    if (this.subscriber !== null) return;
    const subscriber = (this.subscriber = this.redis.duplicate());
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.freeChannel) {
        for (const wake of this.waiting.get(message) ?? []) wake();
        return;
      }
      if (channel !== this.cancelChannel || this.cancelHandler === null) return;
      try {
        const { run_id, reason } = JSON.parse(message) as { run_id: unknown; reason: unknown };
        if (typeof run_id === 'string' && isRelayedCancel(reason)) this.cancelHandler(run_id, reason);
      } catch {
        // not a message of ours
      }
    });
    subscriber.subscribe(this.cancelChannel, this.freeChannel).catch((err) => this.failed(err));
  }

  async claimThread(threadId: string): Promise<boolean> {
    const key = this.threadKey(threadId);
    const got =
      (await this.redis.set(key, this.id, 'PX', LEASE_MS, 'NX')) === 'OK' || (await this.redis.get(key)) === this.id;
    if (got) this.holds(threadId);
    return got;
  }

  async awaitThread(threadId: string, signal: AbortSignal): Promise<void> {
    this.subscribe();
    while (!signal.aborted) {
      if (await this.claimThread(threadId)) {
        if (signal.aborted) this.releaseThread(threadId); // claimed as the waiter gave up: let it go
        return;
      }
      await new Promise<void>((resolve) => {
        const wakers = this.waiting.get(threadId) ?? new Set<() => void>();
        this.waiting.set(threadId, wakers);
        const wake = () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', wake);
          wakers.delete(wake);
          if (wakers.size === 0) this.waiting.delete(threadId);
          resolve();
        };
        const timer = setTimeout(wake, CLAIM_RENEW_MS); // a lost message, or a server that died: try again anyway
        signal.addEventListener('abort', wake, { once: true });
        wakers.add(wake);
      });
    }
  }

  releaseThread(threadId: string): void {
    if (!this.claimed.delete(threadId)) return;
    if (this.claimed.size === 0) {
      clearInterval(this.renewer);
      this.renewer = undefined;
    }
    // GET then DEL, not one script: a deployment's Redis user may run no EVAL (redis-acl-rules.ts). The claim is this
    // server's unless its renewals failed for LEASE_MS (Redis away) and another took it in the instant between the two.
    const key = this.threadKey(threadId);
    void (async () => {
      if ((await this.redis.get(key)) === this.id) await this.redis.del(key);
      await this.redis.publish(this.freeChannel, threadId);
    })().catch((err) => this.failed(err));
  }

  /** The thread is claimed here: renewed every CLAIM_RENEW_MS until released. */
  private holds(threadId: string): void {
    this.claimed.add(threadId);
    this.renewer ??= setInterval(() => {
      // PEXPIRE, not a compare-and-expire script (no EVAL for a deployment): a claim this server lost while Redis was
      // away is another server's now, and renewing it only keeps it a little longer.
      for (const thread of this.claimed)
        this.redis.pexpire(this.threadKey(thread), LEASE_MS).catch((err) => this.failed(err));
    }, CLAIM_RENEW_MS).unref();
  }

  async live(): Promise<string[]> {
    return this.redis.hkeys(this.liveKey);
  }

  async forget(runId: string): Promise<void> {
    await this.redis.hdel(this.liveKey, runId);
  }

  async close(): Promise<void> {
    for (const thread of [...this.claimed]) this.releaseThread(thread);
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

const isRelayedCancel = (reason: unknown): reason is RelayedCancel =>
  reason === 'cancel' || reason === 'cancel-rollback' || reason === 'interrupt' || reason === 'rollback';

function fieldsOf(list: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < list.length; i += 2) out[list[i]!] = list[i + 1]!;
  return out;
}
