import type { Redis } from 'ioredis';
import { afterBudget, noAnswerWithin, storeError } from './store-budget.ts';
import {
  addCall,
  defineBatchScript,
  outcomeOf,
  readReply,
  runBatchScript,
  type LeaseArgs,
  type Mode,
  type ScriptResult,
} from './token-bucket-script.ts';
import type { Bucket, LimitOutcome } from './types.ts';

/**
 * Token buckets on a single Redis, calls decided in batches, one script per
 * batch: each call is atomic (all its buckets or none), later calls of the
 * batch see what earlier ones took, and a burst of concurrent requests costs
 * Redis one script and the edge one command instead of one each. A batch is
 * sent at the end of the event-loop turn that opened it, or, while the
 * previous batch is still waiting for its reply, as soon as that reply
 * arrives: under load, batches grow with the request rate instead of one
 * small script per turn (group commit), and a quiet edge still sends each
 * call at once.
 */

/** Keys in one batch script at most (a script holds Redis for its whole run): a turn with more sends several. */
const MAX_BATCH_KEYS = 1024;

/** Calls waiting for their script, and the budget they share (it runs from the batch's first call). */
class Batch {
  /** Started with the batch: a call's budget includes its wait behind the batch in flight. */
  timer: NodeJS.Timeout | null = null;
  private settled = false;

  /** `ended`: called once, when the batch has its outcome (a reply, an error, or its budget passed). */
  constructor(private readonly ended: (batch: Batch) => void) {}

  readonly keys: string[] = [];
  /** Per call: its mode, its number of buckets, its lease, then each bucket's capacity and period (µs). */
  readonly argv: (string | number)[] = [];
  readonly sizes: number[] = [];
  readonly waiting: { resolve(outcome: LimitOutcome): void; reject(err: unknown): void }[] = [];

  add(
    mode: Mode,
    buckets: readonly Bucket[],
    lease: LeaseArgs | undefined,
    resolve: (outcome: LimitOutcome) => void,
    reject: (err: unknown) => void,
  ): void {
    addCall(this.keys, this.argv, mode, buckets, lease);
    this.sizes.push(buckets.length);
    this.waiting.push({ resolve, reject });
  }

  /** The script's arguments: key count, keys, then each call's arguments. */
  args(): (string | number)[] {
    return [this.keys.length, ...this.keys, ...this.argv];
  }

  /** Hands each call its outcome from the script's reply (a reply after the budget is dropped). */
  settle(reply: unknown): void {
    if (this.settled) return;
    let results: ScriptResult[];
    try {
      results = readReply(reply, this.sizes);
    } catch (err) {
      return this.fail(err);
    }
    this.end();
    for (let i = 0; i < results.length; i++) this.waiting[i]!.resolve(outcomeOf(results[i]!));
  }

  fail(err: unknown): void {
    if (!this.end()) return;
    const error = storeError(err);
    for (const w of this.waiting) w.reject(error);
  }

  /** False when the batch was already settled or failed. */
  private end(): boolean {
    if (this.settled) return false;
    this.settled = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.ended(this);
    return true;
  }
}

export class RedisBatchLimiter {
  /** The calls not sent yet, sent together as one script. */
  private batch: Batch | null = null;
  /** The batch sent whose reply has not arrived (nor its budget passed). */
  private flying: Batch | null = null;
  private readonly sendBatch = () => {
    if (this.flying === null) this.send();
  };
  /** A batch has its outcome: the one in flight lets the next go. */
  private readonly ended = (batch: Batch) => {
    if (this.flying !== batch) return;
    this.flying = null;
    if (this.batch !== null) this.send();
  };

  constructor(
    private readonly client: Redis,
    private readonly timeoutMs: number,
  ) {
    defineBatchScript(client);
  }

  /** `buckets` is not empty. */
  consume(buckets: readonly Bucket[]): Promise<LimitOutcome> {
    return this.call('take', buckets, undefined);
  }

  /** One call of the script in `mode` (with the lease its slots are held under), decided in the next batch. */
  call(mode: Mode, buckets: readonly Bucket[], lease: LeaseArgs | undefined): Promise<LimitOutcome> {
    return new Promise((resolve, reject) => {
      let batch = this.batch;
      if (batch === null) batch = this.open();
      batch.add(mode, buckets, lease, resolve, reject);
      if (batch.keys.length >= MAX_BATCH_KEYS) this.send();
    });
  }

  /** A new pending batch, its budget running; sent after this turn's poll phase, or when the reply in flight lands. */
  private open(): Batch {
    const batch = (this.batch = new Batch(this.ended));
    batch.timer = afterBudget(this.timeoutMs, () => {
      if (this.batch === batch) this.batch = null;
      batch.fail(noAnswerWithin(this.timeoutMs));
    });
    setImmediate(this.sendBatch);
    return batch;
  }

  /**
   * Sends the pending batch as one script (written at once unless the client auto-pipelines). The next batch goes
   * when this one's reply arrives, or when its budget has passed (a store that stopped answering holds no call past
   * its own budget).
   */
  private send(): void {
    const batch = this.batch;
    if (batch === null) return;
    this.batch = null;
    this.flying = batch;
    runBatchScript(this.client, batch.args()).then(
      (reply) => batch.settle(reply),
      (err: unknown) => batch.fail(err),
    );
  }
}
