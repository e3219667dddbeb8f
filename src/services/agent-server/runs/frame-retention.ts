import type { Broadcast, HeldBounds } from './broadcast.ts';
import type { Frame } from './frames.ts';
import type { RunHandle } from './run-handle.ts';
import type { ThreadFrame } from './thread-broadcasts.ts';

/**
 * Frames held per run (and per thread stream) for readers that resume: the last ones, within these bounds and a pool
 * (HELD_TOTAL).
 */
const HELD = { items: 10_000, weight: 4 * 1024 * 1024 };
const weigh = (f: Frame) => f.data.length + f.event.length;
/**
 * Held frames of all runs together, running or finished: a run over it drops its own oldest frames. Thread streams have
 * a pool of their own.
 */
const HELD_TOTAL = 256 * 1024 * 1024;
/**
 * How long a finished run's frames stay for resuming readers, and how many bytes of them all finished runs together may
 * hold.
 */
export const RETAINED_MS = 60_000;
const RETAINED_WEIGHT = 64 * 1024 * 1024;

/** The bounds of the frames each run holds (one pool for all runs). */
export const runFrameBounds = (): HeldBounds<Frame> => ({ ...HELD, weigh, pool: { used: 0, limit: HELD_TOTAL } });

/** The bounds of the frames each thread stream holds (a pool of their own). */
export const threadFrameBounds = (): HeldBounds<ThreadFrame> => ({
  ...HELD,
  weigh: (f: ThreadFrame) => weigh(f.frame),
  pool: { used: 0, limit: HELD_TOTAL },
});

/** Finished runs whose frames are still held for resuming readers, oldest first. */
export class FinishedRuns {
  private readonly retained = new Map<string, { handle: RunHandle; events: Broadcast<Frame>; timer: NodeJS.Timeout }>();
  private retainedWeight = 0;

  /** The finished run, while its frames are held. */
  get(runId: string): RunHandle | undefined {
    return this.retained.get(runId)?.handle;
  }

  /** Keeps a finished run's frames for RETAINED_MS, dropping the oldest retained runs beyond RETAINED_WEIGHT. */
  retain(handle: RunHandle, events: Broadcast<Frame>): void {
    const timer = setTimeout(() => this.forget(handle.runId), RETAINED_MS).unref();
    this.retained.set(handle.runId, { handle, events, timer });
    this.retainedWeight += events.weight;
    for (const runId of this.retained.keys()) {
      if (this.retainedWeight <= RETAINED_WEIGHT) break;
      this.forget(runId);
    }
  }

  forget(runId: string): void {
    const entry = this.retained.get(runId);
    if (entry === undefined) return;
    clearTimeout(entry.timer);
    this.retained.delete(runId);
    this.retainedWeight -= entry.events.weight;
    entry.events.release();
  }

  /** Drops every held run. */
  clear(): void {
    for (const runId of [...this.retained.keys()]) this.forget(runId);
  }
}
