import type { Broadcast, HeldBounds } from './broadcast.ts';
import type { Frame } from './frames.ts';
import type { RunHandle } from './run-handle.ts';
import type { ThreadFrame } from './thread-broadcasts.ts';

/**
 * Frames held per run (and per thread stream) for readers that resume: the last ones, within these bounds and a pool
 * (HELD_TOTAL).
 */
const HELD = { items: 10_000, weight: 4 * 1024 * 1024 };
/**
 * What a held frame costs in memory, in bytes: its text (one byte per character for the ASCII JSON of most frames)
 * and the frame object with its id (measured at about 100 bytes with V8's heap snapshots; 128 keeps a margin). The
 * bounds below are in these bytes, so they bound memory rather than text alone: a run of many small frames (tokens)
 * weighs what it really holds.
 */
const FRAME_OVERHEAD = 128;
const weigh = (f: Frame) => f.data.length + f.event.length + FRAME_OVERHEAD;
/** What a retained finished run costs beside its frames: its slim handle, broadcast, map entry (bytes, with margin). */
const RETAINED_RUN_OVERHEAD = 1024;
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

/**
 * Finished runs whose frames are still held for resuming readers, oldest first. A finished run is kept as a slim
 * handle (its id, who started it, and a way to read its frames): nothing of its execution (config, input, state,
 * closures) stays reachable. One sweep a second forgets the runs older than RETAINED_MS (no timer per run), and the
 * oldest go at once beyond RETAINED_WEIGHT bytes (frames and per-run overhead together).
 */
export class FinishedRuns {
  private readonly retained = new Map<
    string,
    { handle: RunHandle; events: Broadcast<Frame>; until: number; weight: number; onForget?: () => void }
  >();
  private retainedWeight = 0;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly keepMs = RETAINED_MS,
    private readonly maxWeight = RETAINED_WEIGHT,
  ) {}

  /** The finished run, while its frames are held. */
  get(runId: string): RunHandle | undefined {
    return this.retained.get(runId)?.handle;
  }

  /** Bytes the retained runs hold (frames and per-run overhead). */
  get weight(): number {
    return this.retainedWeight;
  }

  get size(): number {
    return this.retained.size;
  }

  /**
   * Keeps a finished run's frames for RETAINED_MS, dropping the oldest retained runs beyond RETAINED_WEIGHT.
   * `onForget` runs when they go (not at clear(): the server is stopping), e.g. to delete a threadless run's record.
   */
  retain(handle: RunHandle, events: Broadcast<Frame>, onForget?: () => void): void {
    events.compact();
    const weight = events.weight + RETAINED_RUN_OVERHEAD;
    const until = Date.now() + this.keepMs;
    this.retained.set(handle.runId, {
      handle: slim(handle, events),
      events,
      until,
      weight,
      ...(onForget && { onForget }),
    });
    this.retainedWeight += weight;
    for (const runId of this.retained.keys()) {
      if (this.retainedWeight <= this.maxWeight) break;
      this.forget(runId);
    }
    this.sweeper ??= setInterval(() => this.sweep(), Math.min(1000, this.keepMs)).unref();
  }

  forget(runId: string, stopping = false): void {
    const entry = this.retained.get(runId);
    if (entry === undefined) return;
    this.retained.delete(runId);
    this.retainedWeight -= entry.weight;
    entry.events.release();
    if (this.retained.size === 0) this.stopSweeping();
    if (!stopping) entry.onForget?.();
  }

  /** Drops every held run (the server stops). */
  clear(): void {
    for (const runId of [...this.retained.keys()]) this.forget(runId, true);
    this.stopSweeping();
  }

  /** Forgets the runs whose time is up (the map is in finishing order: stops at the first still kept). */
  private sweep(): void {
    const now = Date.now();
    for (const [runId, entry] of this.retained) {
      if (entry.until > now) break;
      this.forget(runId);
    }
  }

  private stopSweeping(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }
}

const NO_FRAMES: AsyncIterable<Frame> = { [Symbol.asyncIterator]: async function* () {} };

/** A finished run's handle that keeps only what readers of its frames need. */
function slim(handle: RunHandle, events: Broadcast<Frame>): RunHandle {
  const { runId, resumable, startedBy } = handle;
  const settled = Promise.resolve();
  return {
    runId,
    resumable,
    startedBy,
    frames: NO_FRAMES,
    recorded: settled,
    // The outcome without its values (the state stays in the store; /join reads it there).
    done: handle.done.then(({ status, error }) => ({ status, values: undefined, error })),
    cancel: () => undefined,
    detach: () => undefined,
    join(seen) {
      const reader = events.subscribe(seen);
      return { frames: reader, leave: () => events.leave(reader) };
    },
  };
}
