import { StoreError, type Bucket, type Limiter, type LimitOutcome } from './types.ts';

export type BreakerState = 'closed' | 'open' | 'half-open';

export interface BreakerOptions {
  /** Consecutive store errors that open the circuit. */
  readonly failureThreshold?: number;
  /** How long an open circuit fails fast before one probe is let through. */
  readonly cooldownMs?: number;
  readonly now?: () => number;
  readonly onStateChange?: (state: BreakerState) => void;
}

/**
 * A circuit breaker around a store: after `failureThreshold` consecutive
 * errors it stops calling the store (each call fails at once with a
 * StoreError, so a dead Redis costs a request nothing), and every
 * `cooldownMs` lets one call through as a probe. A probe that succeeds closes
 * the circuit: the store is used again without a restart.
 */
export class BreakerLimiter implements Limiter {
  private failures = 0;
  /** When the last counted failure happened: calls started before it failed in the same episode. */
  private lastFailureAt = -Infinity;
  private openUntil = 0;
  private probing = false;
  private current: BreakerState = 'closed';
  private readonly threshold: number;
  private readonly cooldownMs: number;
  private readonly now: () => number;
  private readonly onStateChange: (state: BreakerState) => void;

  constructor(
    private readonly inner: Limiter,
    { failureThreshold = 5, cooldownMs = 1000, now = Date.now, onStateChange = () => {} }: BreakerOptions = {},
  ) {
    this.threshold = failureThreshold;
    this.cooldownMs = cooldownMs;
    this.now = now;
    this.onStateChange = onStateChange;
  }

  get state(): BreakerState {
    return this.current;
  }

  async consume(buckets: readonly Bucket[]): Promise<LimitOutcome> {
    if (this.current !== 'closed') {
      if (this.probing || this.now() < this.openUntil) throw new StoreError('store circuit open');
      this.probing = true;
      this.set('half-open');
    }
    const startedAt = this.now();
    try {
      const outcome = await this.inner.consume(buckets);
      this.failures = 0;
      if (this.current !== 'closed') this.set('closed');
      return outcome;
    } catch (err) {
      // Calls in flight together fail together (one stalled loop times them all out):
      // only a call started after the previous failure counts as another one.
      if (err instanceof StoreError && startedAt >= this.lastFailureAt) {
        this.failures++;
        this.lastFailureAt = this.now();
      }
      if (err instanceof StoreError && this.failures >= this.threshold) {
        this.openUntil = this.now() + this.cooldownMs;
        if (this.current !== 'open') this.set('open');
      }
      throw err;
    } finally {
      this.probing = false;
    }
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private set(state: BreakerState): void {
    this.current = state;
    this.onStateChange(state);
  }
}
