import type { Frame } from '../runs/frames.ts';

/**
 * What a cancel from another server asks: stop the run, or stop it and roll it back (`action=rollback`); or a newer run
 * of its thread, started on another server, interrupts it (or rolls it back).
 */
export type RelayedCancel = 'cancel' | 'cancel-rollback' | 'interrupt' | 'rollback';

/** Reading a run of another server: where to start, and how to tell that it still goes on. */
export interface FollowOptions {
  /**
   * Frames already seen: the reader gets frames numbered `seen` and after (0: every frame still held). Undefined: from
   * now on.
   */
  readonly seen: number | undefined;
  /** The reader is gone. */
  readonly signal: AbortSignal;
  /**
   * Asked when nothing came for a while: false once the run has ended or lost its server (read in the store), which
   * ends the reading even if the run's end never reached the relay.
   */
  stillGoing(): Promise<boolean>;
}

/**
 * What the servers of one deployment tell each other about runs: each run's frames (so any server can follow a run that
 * goes on in another), cancels (reaching the run's server at once), and which runs are going on somewhere (so every
 * server can settle the runs of a server that died). The in-process relay (local-run-relay.ts) serves a single server;
 * the Redis relay (redis-run-relay.ts) the servers sharing one store.
 */
export interface RunRelay {
  /** True when other servers may share the store (the Redis relay): the periodic orphan sweep runs only then. */
  readonly shared: boolean;
  /** A run starts here (before its first frame). */
  started(runId: string, threadId: string): void;
  /** A frame of a run going on here, with its `id` (its number in the run). */
  publish(runId: string, frame: Frame): void;
  /** The run ended here: readers elsewhere end after its last frame; its frames stay a while for resuming readers. */
  ended(runId: string): void;
  /** The frames of a run going on (or just ended) on another server, until its end; null when this relay cannot. */
  follow(runId: string, options: FollowOptions): AsyncIterable<Frame> | null;
  /** Asks the server that runs the run to cancel it now. */
  cancel(runId: string, reason: RelayedCancel): Promise<void>;
  /** Where the cancels asked on other servers arrive (one handler: the runner's). */
  onCancel(handler: (runId: string, reason: RelayedCancel) => void): void;
  /**
   * Claims the thread for this server (true), or finds it claimed by another server (false): one server at a time runs
   * a thread's runs. Held (and renewed) until released; it lapses within LEASE_MS when its server dies. True again on
   * the server that holds it.
   */
  claimThread(threadId: string): Promise<boolean>;
  /** Waits until this server has claimed the thread (woken when another server releases it), or `signal` aborts. */
  awaitThread(threadId: string, signal: AbortSignal): Promise<void>;
  /** No run of the thread is left on this server: another server may claim it (and its waiters are woken). */
  releaseThread(threadId: string): void;
  /** Runs recorded as going on somewhere (on any server), to check for orphans; ids. */
  live(): Promise<string[]>;
  /** The run is no longer going on anywhere (settled by the sweep). */
  forget(runId: string): Promise<void>;
  close(): Promise<void>;
}
