/** First wait before a dead worker is replaced, ms; doubled for each death in a row, up to RESTART_MAX_MS. */
export const RESTART_FIRST_MS = 250;
export const RESTART_MAX_MS = 30_000;
/** A worker that served this long before dying starts the doubling over. */
export const RESTART_STABLE_MS = 60_000;

/**
 * The wait before replacing a worker that died, given how many of its slot's workers died in a row before it
 * (each after less than RESTART_STABLE_MS): 250 ms, 500 ms, 1 s, ... 30 s. A crash at boot then costs a few
 * restarts a minute, not a fork loop.
 */
export function restartDelayMs(deathsInARow: number): number {
  return Math.min(RESTART_MAX_MS, RESTART_FIRST_MS * 2 ** Math.min(deathsInARow, 20));
}
