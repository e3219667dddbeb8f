import { randomBytes } from 'node:crypto';
import type { LeaseArgs, Mode } from './token-bucket-script.ts';
import type { Bucket, Lease, LimitOutcome } from './types.ts';

/**
 * In-flight slots on a shared store are leases: each allowed call that took slots holds them under a lease id of its
 * own, with an expiry `leaseMs` ahead on the store's clock. While this process holds the lease it renews every lease
 * it holds in one batch every third of `leaseMs`; releasing removes the slots at once. A process that dies renews
 * nothing, so its slots come back within `leaseMs` (the script drops expired leases before counting): a crashed edge
 * or worker never leaks a slot for longer than the lease.
 */

/** What a Redis path offers the keeper: one call of the script in a given mode under a lease. */
export type RunCall = (mode: Mode, buckets: readonly Bucket[], lease: LeaseArgs) => Promise<LimitOutcome>;

export const DEFAULT_LEASE_MS = 30_000;

export class SlotLeases {
  /** Held leases: id -> the in-flight buckets it took. */
  private readonly held = new Map<string, readonly Bucket[]>();
  private readonly prefix = randomBytes(9).toString('base64url');
  private next = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly run: RunCall,
    readonly leaseMs: number = DEFAULT_LEASE_MS,
  ) {
    this.timer = setInterval(() => this.renewAll(), Math.max(10, Math.floor(leaseMs / 3)));
    this.timer.unref();
  }

  /** Leases this process holds now (metrics, tests). */
  get size(): number {
    return this.held.size;
  }

  /** A fresh lease id: unique to this process (random) and call (a counter). */
  args(): LeaseArgs {
    return { id: `${this.prefix}:${(this.next++).toString(36)}`, ttlUs: this.leaseMs * 1000 };
  }

  /** The outcome of a 'take' under `lease`: when allowed, the slots it took are held (and renewed) until released. */
  hold(outcome: LimitOutcome, lease: LeaseArgs, buckets: readonly Bucket[]): LimitOutcome {
    if (!outcome.allowed) return outcome;
    const slots = buckets.filter((b) => b.inFlight);
    this.held.set(lease.id, slots);
    const release = async (): Promise<void> => {
      if (!this.held.delete(lease.id)) return;
      // A failed release leaves the slots to expire with the lease: nobody renews them any more.
      await this.run('refund', slots, lease).catch(() => undefined);
    };
    return { ...outcome, lease: { release } satisfies Lease };
  }

  /** One 'renew' call per held lease; the Redis path batches them (single Redis) or pipelines them (Cluster). */
  renewAll(): void {
    for (const [id, slots] of this.held)
      this.run('renew', slots, { id, ttlUs: this.leaseMs * 1000 }).catch(() => undefined);
  }

  close(): void {
    clearInterval(this.timer);
    this.held.clear();
  }
}
