import { Broadcast, type HeldBounds } from './broadcast.ts';
import type { Frame } from './frames.ts';
import type { ThreadStreamMode } from './stream-modes.ts';

/**
 * Each thread's stream (`GET /threads/{thread_id}/stream`): the events of
 * every run on the thread, one run after the other, for clients that watch
 * the thread rather than one run. It stays open between runs.
 *
 * Frames are numbered per thread (`id: <n>`), so a client resumes the thread
 * stream with `Last-Event-ID` as it resumes a run's. What a reader gets
 * depends on its modes:
 * - `run_modes`: every event of the runs, as their own streams send them,
 *   and `run_done` (`{run_id, status}`) after each run;
 * - `lifecycle`: only `metadata` (a run starts: `{run_id, attempt}`) and `run_done`;
 * - `state_update`: `values`, the thread's whole state after each step of
 *   each run (whether or not the run streams `values` itself).
 *
 * A thread's frames are held (the last ones, within the bounds given) while
 * a run is on it or a reader follows it, and for `idleMs` after the last
 * of both has gone.
 */
/** A frame of a thread's stream, and the modes whose readers get it. */
export interface ThreadFrame {
  readonly frame: Frame;
  readonly modes: readonly ThreadStreamMode[];
}

/** Which modes a run's frame belongs to on its thread's stream. */
export function threadModesOf(event: string): ThreadStreamMode[] {
  if (event === 'metadata' || event === 'run_done') return ['run_modes', 'lifecycle'];
  if (event === 'values') return ['run_modes', 'state_update'];
  return ['run_modes'];
}

export interface ThreadReader {
  readonly frames: AsyncIterable<Frame>;
  /** The client is gone. */
  leave(): void;
}

interface Followed {
  readonly events: Broadcast<ThreadFrame>;
  runs: number;
  readers: number;
  idle?: NodeJS.Timeout;
}

export class ThreadStreams {
  private readonly threads = new Map<string, Followed>();

  constructor(
    private readonly held: HeldBounds<ThreadFrame>,
    private readonly idleMs: number,
  ) {}

  /** A run starts on the thread: its frames are published until `runEnded`. */
  runStarted(threadId: string): void {
    this.entry(threadId).runs++;
  }

  runEnded(threadId: string): void {
    const entry = this.threads.get(threadId);
    if (entry === undefined) return;
    entry.runs--;
    this.checkIdle(threadId, entry);
  }

  /** Adds a frame to the thread's stream (numbered there), for the readers of `modes`. */
  publish(threadId: string, frame: Frame, modes: readonly ThreadStreamMode[] = threadModesOf(frame.event)): void {
    const events = this.threads.get(threadId)?.events;
    events?.push({ frame: { ...frame, id: String(events.count) }, modes });
  }

  /**
   * A reader of `modes`: from now (`seen` undefined), or every held frame after the first `seen` (frames count from 0: after the frame with id `n`, `seen` is `n + 1`), then what comes.
   */
  follow(threadId: string, modes: readonly ThreadStreamMode[], seen?: number): ThreadReader {
    const entry = this.entry(threadId);
    entry.readers++;
    const reader = entry.events.subscribe(seen);
    let left = false;
    return {
      frames: only(reader, new Set(modes)),
      leave: () => {
        if (left) return;
        left = true;
        entry.events.leave(reader);
        entry.readers--;
        this.checkIdle(threadId, entry);
      },
    };
  }

  /** The thread is gone: its readers' streams end and its frames are dropped. */
  end(threadId: string): void {
    const entry = this.threads.get(threadId);
    if (entry === undefined) return;
    clearTimeout(entry.idle);
    this.threads.delete(threadId);
    entry.events.close();
    entry.events.release();
  }

  /** Ends every thread's stream (the server stops). */
  close(): void {
    for (const threadId of [...this.threads.keys()]) this.end(threadId);
  }

  private entry(threadId: string): Followed {
    let entry = this.threads.get(threadId);
    if (entry === undefined) {
      entry = { events: new Broadcast(this.held), runs: 0, readers: 0 };
      this.threads.set(threadId, entry);
    }
    clearTimeout(entry.idle);
    entry.idle = undefined;
    return entry;
  }

  private checkIdle(threadId: string, entry: Followed): void {
    if (entry.runs > 0 || entry.readers > 0 || this.threads.get(threadId) !== entry) return;
    clearTimeout(entry.idle);
    entry.idle = setTimeout(() => this.end(threadId), this.idleMs).unref();
  }
}

async function* only(frames: AsyncIterable<ThreadFrame>, modes: ReadonlySet<ThreadStreamMode>): AsyncGenerator<Frame> {
  for await (const f of frames) if (f.modes.some((m) => modes.has(m))) yield f.frame;
}
