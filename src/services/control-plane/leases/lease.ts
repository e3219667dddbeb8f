import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';

/**
 * A named lease in Redis, held by one process at a time: taken with SET NX PX, renewed every ttl/3 by a short script
 * that extends it only while the key still holds this holder's token, released (deleted) the same way. A holder that
 * dies stops renewing and the lease lapses after its ttl; a holder whose renewal finds another token (or cannot reach
 * Redis before the ttl is over) has lost it (`onLost`). Without Redis (a gateway alone, in memory) it is always held.
 * Used for the control plane's singletons: hosting deployments with the local host, build-on-push polling, builds.
 */
export interface Lease {
  /** Whether this process holds the lease now. */
  readonly held: boolean;
  /** Resolves once this process holds the lease (tried every ttl/3); rejects when the lease is closed first. */
  acquired(): Promise<void>;
  /** Resolves after the first try to take it (`held` then says whether it was taken). */
  tried(): Promise<void>;
  /** Stops renewing and trying; releases the lease when held. */
  close(): Promise<void>;
}

export interface LeaseOptions {
  /** The lease's key. */
  readonly key: string;
  /** How long a lease lasts without a renewal (default 10 s). */
  readonly ttlMs?: number;
  readonly log: Logger;
  /** Called once when a held lease is lost (another holder, or no renewal within the ttl). */
  readonly onLost?: () => void;
  /** Called each time the lease is taken (the first time, and again after it was lost). */
  readonly onAcquired?: () => void;
}

const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;

export class LeaseClosedError extends Error {
  constructor(key: string) {
    super(`lease ${key} closed before it was acquired`);
  }
}

/** A lease always held: one process alone (no shared store). */
export function soleLease(): Lease {
  return {
    held: true,
    acquired: () => Promise.resolve(),
    tried: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
}

export class RedisLease implements Lease {
  private readonly token = randomBytes(12).toString('hex');
  private readonly ttlMs: number;
  private heldUntil = 0;
  private holding = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly waiters: { resolve: () => void; reject: (err: Error) => void }[] = [];
  private readonly first: Promise<void>;

  constructor(
    private readonly redis: Redis,
    private readonly o: LeaseOptions,
  ) {
    this.ttlMs = o.ttlMs ?? 10_000;
    this.first = this.tick();
  }

  tried(): Promise<void> {
    return this.first;
  }

  get held(): boolean {
    return this.holding && Date.now() < this.heldUntil;
  }

  acquired(): Promise<void> {
    if (this.held) return Promise.resolve();
    if (this.closed) return Promise.reject(new LeaseClosedError(this.o.key));
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    for (const w of this.waiters.splice(0)) w.reject(new LeaseClosedError(this.o.key));
    if (!this.holding) return;
    this.holding = false;
    await this.redis
      .eval(RELEASE, 1, this.o.key, this.token)
      .catch((err: unknown) => this.o.log.warn({ err, key: this.o.key }, 'lease not released: it lapses by itself'));
  }

  private async tick(): Promise<void> {
    if (this.closed) return;
    const started = Date.now();
    try {
      if (this.holding) {
        const renewed = await this.redis.eval(RENEW, 1, this.o.key, this.token, String(this.ttlMs));
        if (renewed === 1) this.heldUntil = started + this.ttlMs;
        else this.lost('another holder has it');
      } else {
        const taken = await this.redis.set(this.o.key, this.token, 'PX', this.ttlMs, 'NX');
        if (taken === 'OK' && !this.closed) {
          this.holding = true;
          this.heldUntil = started + this.ttlMs;
          this.o.log.info({ key: this.o.key }, 'lease acquired');
          for (const w of this.waiters.splice(0)) w.resolve();
          this.o.onAcquired?.();
        }
      }
    } catch (err) {
      if (this.holding && Date.now() >= this.heldUntil) this.lost(`cannot renew: ${(err as Error).message}`);
    }
    if (this.closed) return;
    this.timer = setTimeout(() => void this.tick(), Math.max(100, Math.floor(this.ttlMs / 3)));
    this.timer.unref();
  }

  private lost(why: string): void {
    if (!this.holding) return;
    this.holding = false;
    this.o.log.error({ key: this.o.key, why }, 'lease lost');
    this.o.onLost?.();
  }
}
