import type { ErrorCode } from '../errors.ts';

/**
 * The Limiter contract. Being over a limit is an outcome (a value); only a
 * store failure throws (StoreError), and the edge decides open or closed.
 */

/**
 * One token bucket: capacity `capacity`, refilled continuously at capacity/perSeconds tokens per second. Or, with
 * `inFlight`, a set of `capacity` slots (perSeconds unused): a call takes one, and holds it until its lease is released
 * (on a shared store: until the lease's owner stops renewing it, at most the store's lease time).
 */
export interface Bucket {
  readonly key: string;
  readonly capacity: number;
  readonly perSeconds: number;
  readonly inFlight?: boolean;
}

/** The in-flight slots one allowed call took, until released. */
export interface Lease {
  /** Gives the call's slots back. Idempotent; never rejects (on a store failure the slots expire with the lease). */
  release(): Promise<void>;
}

/** What a full slot set answers as the wait: nobody knows when a response will end, so the client tries again soon. */
export const SLOT_RETRY_MS = 1000;

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
  /** Allowed with in-flight buckets: the slots taken, held until released. Absent otherwise. */
  readonly lease?: Lease;
}

export interface Limiter {
  /**
   * Takes one token from every bucket (one slot from every in-flight bucket), or from none. All buckets are decided
   * together.
   */
  consume(buckets: readonly Bucket[]): Promise<LimitOutcome>;
  close(): Promise<void>;
}

/** One bucket as an operator reads it: tokens (or free slots) left now, and slots held for an in-flight bucket. */
export interface BucketState {
  readonly remaining: number;
  /** In-flight buckets: slots held now (unexpired leases). */
  readonly held?: number;
}

/**
 * What an operator may do to one bucket (the admin listener's `/limits/buckets`): read its state, or reset it (a rate
 * bucket full again, an in-flight bucket with no slot held: its holders' later releases and renewals find nothing).
 */
export interface BucketAdmin {
  peek(bucket: Bucket): Promise<BucketState>;
  reset(bucket: Bucket): Promise<void>;
}

export class StoreError extends Error {
  readonly code = 'store_unavailable' satisfies ErrorCode;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
  }
}
