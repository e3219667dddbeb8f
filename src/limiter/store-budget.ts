import { StoreError } from './types.ts';

/**
 * The time a Redis limiter call may take (its budget): past it, the call is a
 * StoreError and the request is not held up. Shared by the single-Redis batch
 * and the Cluster path.
 */

/**
 * Calls `passed` once `ms` have gone by, judged after the I/O already waiting has been read (setImmediate runs after
 * this loop turn's poll phase): when the edge's own event loop was blocked past the budget, a reply that arrived in
 * time is taken instead of being counted as a store failure.
 */
export function afterBudget(ms: number, passed: () => void): NodeJS.Timeout {
  return setTimeout(() => setImmediate(passed), ms);
}

export function noAnswerWithin(ms: number): StoreError {
  return new StoreError(`redis: no answer within ${ms} ms`);
}

/** Any failure of a store call, as the StoreError the edge decides open or closed on. */
export function storeError(err: unknown): StoreError {
  return err instanceof StoreError
    ? err
    : new StoreError(`redis: ${(err as Error)?.message ?? String(err)}`, { cause: err });
}
