import type { Frame } from './frames.ts';
import type { StreamMode } from './stream-modes.ts';
import type { MultitaskStrategy, Run, RunStatus } from '../store/records.ts';

/** What to run: the run record, its graph and input, and how it streams and shares its thread. */
export interface RunSpec {
  /** The run record (stored by the runner, first as pending). */
  readonly run: Run;
  readonly graphId: string;
  /** Graph input, or a LangGraph Command. */
  readonly input: unknown;
  /** The LangGraph config: configurable (with thread_id and the user), metadata, tags, ... */
  readonly config: Record<string, unknown>;
  readonly modes: readonly StreamMode[];
  readonly subgraphs: boolean;
  /** Threadless: the thread is temporary; deleted at the end unless kept. */
  readonly threadless: boolean;
  readonly keepThread: boolean;
  readonly strategy: MultitaskStrategy;
  /** `stream_resumable`: a join without `Last-Event-ID` replays the run from its first frame. */
  readonly resumable: boolean;
  /** The identity of the user who started it (kept in memory with the run, never stored). */
  readonly startedBy: string;
  /**
   * Started through the thread-centric protocol (protocol/): the graph runs under `streamEvents` v3, whose protocol
   * events become the run's frames (runs/protocol-frames.ts), whatever `modes` says.
   */
  readonly protocol?: boolean;
  /** The run begins once this settles too (a protocol run waits for its readers: protocol/run-commands.ts). */
  readonly gate?: Promise<unknown>;
  /**
   * The run begins once this settles too: its thread is busy on another server sharing the store, and this waits until
   * that server has released it and this one has claimed it (relay/thread-elsewhere.ts).
   */
  readonly turn?: (signal: AbortSignal) => Promise<void>;
  /** `after_seconds`: the run waits this long (pending, cancellable) before its turn. */
  readonly afterMs?: number;
  /** Called (POST, the run with its outcome) once the run's end is recorded (webhooks.ts). */
  readonly webhook?: string;
}

export interface RunOutcome {
  readonly status: RunStatus;
  /** Final state values (plain JSON), when the graph produced any. */
  readonly values: unknown;
  readonly error: { error: string; message: string } | null;
}

/**
 * Why a run stops early: its client left, a newer run interrupted it (or rolled it back), the server stops, or a cancel
 * request (or thread deletion) asked (`cancel-rollback`: a cancel with `action=rollback`). A rolled back run is deleted
 * and its thread goes back to its state before the run (rollback.ts).
 */
export type CancelReason = 'disconnect' | 'interrupt' | 'rollback' | 'shutdown' | 'cancel' | 'cancel-rollback';

/** A client following a run's events from the moment it joined. */
export interface RunReader {
  readonly frames: AsyncIterable<Frame>;
  /** The client is gone: stop queueing events for it. */
  leave(): void;
}

export interface RunHandle {
  readonly runId: string;
  /** The events for the response that started the run (`metadata` first). */
  readonly frames: AsyncIterable<Frame>;
  readonly done: Promise<RunOutcome>;
  /** Settles once the run is in the store (pending, with its lease): answer nothing about it before. */
  readonly recorded: Promise<void>;
  cancel(reason: CancelReason): void;
  /** The reader is gone but the run goes on (`on_disconnect: continue`). */
  detach(): void;
  /**
   * Another reader of the run's events: from now on (`seen` undefined), or every held frame after frame number `seen`,
   * then what comes.
   */
  join(seen?: number): RunReader;
  readonly resumable: boolean;
  readonly startedBy: string;
}
