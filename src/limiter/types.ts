import type { ErrorCode } from '../errors.ts';

/**
 * The Limiter contract. Being over a limit is an outcome (a value); only a
 * store failure throws (StoreError), and the edge decides open or closed.
 */

/** One token bucket: capacity `capacity`, refilled continuously at capacity/perSeconds tokens per second. */
export interface Bucket {
  readonly key: string;
  readonly capacity: number;
  readonly perSeconds: number;
}

export interface BucketOutcome {
  /** Whole tokens left in this bucket after the request (rounded down). */
  readonly remaining: number;
  /** Milliseconds until this bucket holds one more token than `remaining` (0 when full). */
  readonly msToNextToken: number;
  /** Milliseconds until this bucket holds at least one token (0 when it does now). */
  readonly msToToken: number;
}

export interface LimitOutcome {
  /** True when every bucket had a token; then one was taken from each. When false, none was taken. */
  readonly allowed: boolean;
  /** One per requested bucket, in the same order. */
  readonly buckets: readonly BucketOutcome[];
  /** When denied: milliseconds until every bucket holds a token. 0 when allowed. */
  readonly retryAfterMs: number;
}

export interface Limiter {
  /** Takes one token from every bucket, or from none. All buckets are decided together. */
  consume(buckets: readonly Bucket[]): Promise<LimitOutcome>;
  close(): Promise<void>;
}

export class StoreError extends Error {
  readonly code = 'store_unavailable' satisfies ErrorCode;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
  }
}
