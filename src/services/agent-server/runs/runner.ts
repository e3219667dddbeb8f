import type { BaseCheckpointSaver } from '@langchain/langgraph';
import type { Logger } from 'pino';
import { Broadcast, type HeldBounds } from './broadcast.ts';
import { conflict } from '../errors.ts';
import { FrameMapper, frame, graphStreamModes, rootValues, type Frame } from './frames.ts';
import { interruptsOf, type GraphRegistry, type StateSnapshotLike } from '../graphs.ts';
import type { StreamMode } from './stream-modes.ts';
import { toPlain } from '../serialize.ts';
import type { AgentStore } from '../store/agent-store.ts';
import { ThreadStreams, type ThreadFrame } from './thread-broadcasts.ts';
import type { Json, MultitaskStrategy, Run, RunStatus, Thread, ThreadStatus } from '../store/records.ts';

/**
 * Runs graphs. Each run streams its events (metadata first) to the
 * response that started it; the run itself goes on in the background
 * and records its outcome on the run and its thread. One run at a time per
 * thread: a second one answers 409 unless its multitask strategy cancels
 * the active run (`interrupt`, `rollback`) or waits for it (`enqueue`).
 * Other clients can join a run's events while it goes on (`join`), and a
 * client that lost its stream can resume it: every frame carries an `id`
 * (its number in the run), the last frames of each run are held (see
 * HELD), and a finished run's frames stay for RETAINED_MS after its end.
 * The frames of a thread's runs also go to the thread's stream (`threads`).
 *
 * Several servers may share one store. While a run goes on, its server
 * renews the run's lease in the store (`run:<id>`, see LEASE_MS): a run
 * recorded as running without a lease has lost its server (orphans.ts).
 * A cancel asked on another server reaches the run as a `cancel:<id>`
 * lease, which its server looks for at each renewal.
 */
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
}

export interface RunOutcome {
  readonly status: RunStatus;
  /** Final state values (plain JSON), when the graph produced any. */
  readonly values: unknown;
  readonly error: { error: string; message: string } | null;
}

/**
 * Why a run stops early: its client left, a newer run interrupted it, the server stops, or a cancel request (or thread
 * deletion) asked.
 */
export type CancelReason = 'disconnect' | 'interrupt' | 'shutdown' | 'cancel';

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
const RETAINED_MS = 60_000;
const RETAINED_WEIGHT = 64 * 1024 * 1024;

/**
 * How long a run's lease lasts; its server renews it (and looks for a cancel from another server) every LEASE_MS /
 * RENEWALS.
 */
export const LEASE_MS = 30_000;
const RENEWALS = 6;

/** Where a run's frames go: numbered, held, and to every reader of the run and of its thread. */
interface RunEvents {
  push(frame: Frame): void;
  /** The run starts (after the runs queued ahead of it): its thread's stream gets its `metadata`, then its frames. */
  begin(): void;
  /** The state after a step, for the thread stream's `state_update` readers only (the run does not stream `values`). */
  state(values: unknown): void;
  close(status: RunStatus): void;
}

export interface RunnerDeps {
  readonly store: AgentStore;
  readonly graphs: GraphRegistry;
  readonly checkpointer: BaseCheckpointSaver;
  readonly log: Logger;
}

export class Runner {
  /** Per thread: the active run, then the queued ones. */
  private readonly queues = new Map<string, RunHandle[]>();
  /** Every run not yet finished, by run id. */
  private readonly all = new Map<string, RunHandle>();
  /** Finished runs whose frames are still held for resuming readers, oldest first. */
  private readonly retained = new Map<string, { handle: RunHandle; events: Broadcast<Frame>; timer: NodeJS.Timeout }>();
  private retainedWeight = 0;
  private readonly held: HeldBounds<Frame> = { ...HELD, weigh, pool: { used: 0, limit: HELD_TOTAL } };
  /** Each thread's stream: the frames of its runs, one run after the other. */
  readonly threads = new ThreadStreams(
    { ...HELD, weigh: (f: ThreadFrame) => weigh(f.frame), pool: { used: 0, limit: HELD_TOTAL } },
    RETAINED_MS,
  );

  private readonly renewals: NodeJS.Timeout;

  constructor(private readonly deps: RunnerDeps) {
    this.renewals = setInterval(() => void this.renewLeases(), LEASE_MS / RENEWALS).unref();
  }

  /** True while a run is active or queued on the thread. */
  busy(threadId: string): boolean {
    return (this.queues.get(threadId)?.length ?? 0) > 0;
  }

  /** The run while it is queued or running; undefined once it has finished (or on another server). */
  find(runId: string): RunHandle | undefined {
    return this.all.get(runId);
  }

  /** The run while it goes on, or for RETAINED_MS after its end: what a joining or resuming reader follows. */
  followable(runId: string): RunHandle | undefined {
    return this.all.get(runId) ?? this.retained.get(runId)?.handle;
  }

  /** The thread's active run and the runs queued behind it. */
  onThread(threadId: string): RunHandle[] {
    return [...(this.queues.get(threadId) ?? [])];
  }

  /** Starts `spec` (synchronously claims its thread: call it with no await after the busy check). */
  start(spec: RunSpec): RunHandle {
    const threadId = spec.run.thread_id;
    const ahead = spec.threadless ? [] : [...(this.queues.get(threadId) ?? [])];
    if (ahead.length > 0 && spec.strategy === 'reject') {
      throw conflict(
        'Thread is already running a task. Wait for it to finish or choose a different multitask strategy.',
      );
    }
    if (spec.strategy === 'interrupt' || spec.strategy === 'rollback') for (const h of ahead) h.cancel('interrupt');
    const before = Promise.all(ahead.map((h) => h.done.catch(() => undefined)));

    const events = new Broadcast<Frame>(this.held);
    const metadata = frame('metadata', { run_id: spec.run.run_id, attempt: 1 });
    let thread: string | null = null; // set once the run begins: a queued run shows on its thread's stream when its turn comes
    if (!spec.threadless) this.threads.runStarted(threadId);
    const numbered: RunEvents = {
      push: (f) => {
        events.push({ ...f, id: String(events.count + 1) });
        if (thread !== null) this.threads.publish(thread, f);
      },
      begin: () => {
        if (spec.threadless) return;
        thread = threadId;
        this.threads.publish(thread, metadata);
      },
      state: (values) => {
        if (thread !== null) this.threads.publish(thread, frame('values', values), ['state_update']);
      },
      close: (status) => {
        events.close();
        if (thread !== null) this.threads.publish(thread, frame('run_done', { run_id: spec.run.run_id, status }));
        if (!spec.threadless) this.threads.runEnded(threadId);
      },
    };
    const first = events.subscribe();
    const controller = new AbortController();
    let cancelReason: CancelReason | null = null;
    numbered.push(metadata);
    const done = this.execute(spec, numbered, controller.signal, () => cancelReason, before);
    const handle: RunHandle = {
      runId: spec.run.run_id,
      frames: first,
      done,
      resumable: spec.resumable,
      startedBy: spec.startedBy,
      cancel(reason) {
        if (cancelReason !== null) return;
        cancelReason = reason;
        controller.abort(new Error(`run cancelled (${reason})`));
      },
      detach: () => events.leave(first),
      join(seen) {
        const reader = events.subscribe(seen);
        return { frames: reader, leave: () => events.leave(reader) };
      },
    };
    this.all.set(handle.runId, handle);
    if (!spec.threadless) this.queues.set(threadId, [...(this.queues.get(threadId) ?? []), handle]);
    void done.finally(() => {
      this.all.delete(handle.runId);
      this.retain(handle, events);
      const left = (this.queues.get(threadId) ?? []).filter((h) => h !== handle);
      if (left.length > 0) this.queues.set(threadId, left);
      else this.queues.delete(threadId);
    });
    return handle;
  }

  /** Cancels every run and waits for them to wind down. */
  async close(): Promise<void> {
    clearInterval(this.renewals);
    const handles = [...this.all.values()];
    for (const h of handles) h.cancel('shutdown');
    await Promise.all(handles.map((h) => h.done.catch(() => undefined)));
    for (const runId of [...this.retained.keys()]) this.forget(runId);
    this.threads.close();
  }

  /** Keeps a finished run's frames for RETAINED_MS, dropping the oldest retained runs beyond RETAINED_WEIGHT. */
  private retain(handle: RunHandle, events: Broadcast<Frame>): void {
    const timer = setTimeout(() => this.forget(handle.runId), RETAINED_MS).unref();
    this.retained.set(handle.runId, { handle, events, timer });
    this.retainedWeight += events.weight;
    for (const runId of this.retained.keys()) {
      if (this.retainedWeight <= RETAINED_WEIGHT) break;
      this.forget(runId);
    }
  }

  private forget(runId: string): void {
    const entry = this.retained.get(runId);
    if (entry === undefined) return;
    clearTimeout(entry.timer);
    this.retained.delete(runId);
    this.retainedWeight -= entry.events.weight;
    entry.events.release();
  }

  private async execute(
    spec: RunSpec,
    events: RunEvents,
    signal: AbortSignal,
    cancelled: () => CancelReason | null,
    before: Promise<unknown>,
  ): Promise<RunOutcome> {
    const { store, graphs, checkpointer, log } = this.deps;
    const { run } = spec;
    const threadId = run.thread_id;
    const runLog = log.child({
      run_id: run.run_id,
      thread_id: spec.threadless ? undefined : threadId,
      graph_id: spec.graphId,
    });
    await store.lease(`run:${run.run_id}`, LEASE_MS);
    await this.setRun(run, 'pending');
    // A queued run waits for the runs ahead of it, unless it is cancelled first.
    await Promise.race([before, whenAborted(signal)]);
    if (!signal.aborted) events.begin();
    let status: RunStatus = 'success';
    let error: RunOutcome['error'] = null;
    let state: StateSnapshotLike | null = null;
    const mapper = new FrameMapper(new Set(spec.modes));
    try {
      if (signal.aborted) throw signal.reason;
      await this.setRun(run, 'running');
      if (!spec.threadless) {
        await this.setThread(threadId, (t) => ({
          status: 'busy',
          metadata: { ...t.metadata, graph_id: spec.graphId, assistant_id: run.assistant_id },
        }));
      }
      runLog.debug('run started');
      const graph = await graphs.get(spec.graphId, spec.config);
      const stream = await graph.stream(spec.input, {
        ...spec.config,
        streamMode: graphStreamModes(spec.modes),
        subgraphs: spec.subgraphs,
        signal,
      });
      const streamsValues = spec.modes.includes('values');
      for await (const chunk of stream) {
        for (const f of mapper.map(chunk)) events.push(f);
        const values = streamsValues ? undefined : rootValues(chunk);
        if (values !== undefined) events.state(values);
      }
      for (const f of mapper.finish()) events.push(f);
      state = await graph.getState({ configurable: { thread_id: threadId } }).catch(() => null);
    } catch (err) {
      const reason = cancelled();
      if (reason !== null) {
        status = 'interrupted';
        if (reason === 'interrupt')
          events.push(
            frame('error', {
              error: 'CancelledError',
              message: 'Run cancelled: a newer run on this thread interrupted it.',
            }),
          );
        if (reason === 'shutdown')
          events.push(
            frame('error', { error: 'ServiceUnavailable', message: 'Run cancelled: the server is shutting down.' }),
          );
        if (reason === 'disconnect')
          events.push(frame('error', { error: 'CancelledError', message: 'Run cancelled: its client disconnected.' }));
        if (reason === 'cancel')
          events.push(frame('error', { error: 'CancelledError', message: 'Run cancelled on request.' }));
        runLog.info({ reason }, 'run cancelled');
      } else {
        status = 'error';
        error = { error: (err as Error)?.name || 'Error', message: (err as Error)?.message || String(err) };
        events.push(frame('error', error));
        runLog.warn({ err: error }, 'run failed');
      }
      const graph = await graphs.get(spec.graphId, spec.config).catch(() => null);
      state = graph ? await graph.getState({ configurable: { thread_id: threadId } }).catch(() => null) : null;
    }
    const values = state
      ? toPlain(state.values)
      : mapper.lastValues === undefined
        ? undefined
        : toPlain(mapper.lastValues);
    try {
      await this.setRun(run, status);
      if (spec.threadless && !spec.keepThread) await checkpointer.deleteThread(threadId);
      else await this.finishThread(spec, status, values, state);
    } catch (err) {
      runLog.error({ err: (err as Error).message }, 'could not record the run outcome');
    } finally {
      events.close(status);
    }
    runLog.debug({ status }, 'run finished');
    return { status, values, error };
  }

  /** Renews the lease of every run going on here, and cancels those another server asked to cancel. */
  private async renewLeases(): Promise<void> {
    const { store, log } = this.deps;
    for (const handle of this.all.values()) {
      try {
        await store.lease(`run:${handle.runId}`, LEASE_MS);
        if (await store.held(`cancel:${handle.runId}`)) handle.cancel('cancel');
      } catch (err) {
        log.warn({ run_id: handle.runId, err: (err as Error).message }, 'could not renew the lease of a run');
      }
    }
  }

  private async setRun(run: Run, status: RunStatus): Promise<void> {
    await this.deps.store.putRun({ ...run, status, updated_at: new Date().toISOString() });
  }

  private async setThread(
    threadId: string,
    patch: Partial<Thread> | ((thread: Thread) => Partial<Thread>),
  ): Promise<void> {
    const thread = await this.deps.store.getThread(threadId);
    if (thread === null) return;
    const changes = typeof patch === 'function' ? patch(thread) : patch;
    await this.deps.store.putThread({ ...thread, ...changes, updated_at: new Date().toISOString() });
  }

  private async finishThread(
    spec: RunSpec,
    status: RunStatus,
    values: unknown,
    state: StateSnapshotLike | null,
  ): Promise<void> {
    const interrupts = interruptsOf(state);
    const threadStatus: ThreadStatus =
      status === 'error' ? 'error' : Object.keys(interrupts).length > 0 ? 'interrupted' : 'idle';
    const patch = { status: threadStatus, values: (values ?? null) as Json | null, interrupts };
    if (spec.threadless) {
      const now = new Date().toISOString();
      await this.deps.store.putThread({
        thread_id: spec.run.thread_id,
        created_at: spec.run.created_at,
        updated_at: now,
        metadata: { graph_id: spec.graphId, assistant_id: spec.run.assistant_id },
        config: {},
        ...patch,
      });
    } else if (!this.busyAfter(spec.run.thread_id, spec.run.run_id)) await this.setThread(spec.run.thread_id, patch);
    else await this.setThread(spec.run.thread_id, { values: patch.values, interrupts });
  }

  /** Another run is queued behind this one: the thread stays busy. */
  private busyAfter(threadId: string, runId: string): boolean {
    return (this.queues.get(threadId) ?? []).some((h) => h.runId !== runId);
  }
}

/** Resolves when `signal` aborts (and never if it does not). */
function whenAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) =>
    signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true }),
  );
}
