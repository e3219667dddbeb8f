import type { BaseCheckpointSaver } from '@langchain/langgraph';
import type { Logger } from 'pino';
import { interruptsOf, type GraphRegistry, type StateSnapshotLike } from '../graphs.ts';
import { toPlain } from '../serialize.ts';
import type { AgentStore } from '../store/agent-store.ts';
import type { Json, Run, RunStatus, Thread, ThreadStatus } from '../store/records.ts';
import { FrameMapper, eventFrame, frame, graphStreamModes, graphSubgraphs, rootValues, type Frame } from './frames.ts';
import { protocolFrame } from './protocol-frames.ts';
import type { CancelReason, RunOutcome, RunSpec } from './run-handle.ts';
import { LEASE_MS } from './run-leases.ts';
import { rollBack } from './rollback.ts';
import type { ThreadQueues } from './thread-queues.ts';
import type { Webhooks } from './webhooks.ts';
import type { RunRelay } from '../relay/run-relay.ts';

/** Where a run's frames go: numbered, held, and to every reader of the run and of its thread. */
export interface RunEvents {
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
  /** Calls runs' webhooks once they end. */
  readonly webhooks: Webhooks;
  /** Where the runs' frames and cancels go to and come from the other servers sharing the store. */
  readonly relay: RunRelay;
}

/**
 * Runs one run's graph once its turn comes: records it pending then running, streams the graph's chunks as frames to
 * `events`, and records the outcome on the run and its thread (or deletes a threadless run's temporary thread).
 */
export class RunExecution {
  constructor(
    private readonly deps: RunnerDeps,
    private readonly queues: ThreadQueues,
  ) {}

  /**
   * Takes the run's lease and records it as pending. The run is answered only after this, so a read or a join sent
   * right after `runs.create` finds it (it used to race the answer: a 404 on a Redis store).
   */
  async record(run: Run): Promise<void> {
    await this.deps.store.lease(`run:${run.run_id}`, LEASE_MS);
    await this.setRun(run, 'pending');
  }

  async execute(
    spec: RunSpec,
    events: RunEvents,
    signal: AbortSignal,
    cancelled: () => CancelReason | null,
    before: Promise<unknown>,
    recorded: Promise<void>,
  ): Promise<RunOutcome> {
    const { graphs, checkpointer, log } = this.deps;
    const { run } = spec;
    const threadId = run.thread_id;
    const runLog = log.child({
      run_id: run.run_id,
      thread_id: spec.threadless ? undefined : threadId,
      graph_id: spec.graphId,
    });
    let status: RunStatus = 'success';
    let error: RunOutcome['error'] = null;
    let state: StateSnapshotLike | null = null;
    const mapper = new FrameMapper(new Set(spec.modes), spec.subgraphs);
    // Every failure from here on (recording, the graph, serialising its output) ends the run as `error`: none may
    // escape, since nothing awaits a background run and an unhandled rejection must not take the process down.
    try {
      await recorded;
      // A queued run waits for the runs ahead of it (and a delayed run, `after_seconds`, for its time too), unless it is
      // cancelled first.
      await Promise.race([
        Promise.all([before, delay(spec.afterMs, signal), spec.gate, spec.turn?.(signal)]),
        whenAborted(signal),
      ]);
      if (signal.aborted) throw signal.reason;
      events.begin();
      await this.setRun(run, 'running');
      if (!spec.threadless) {
        await this.setThread(threadId, (t) => ({
          status: 'busy',
          metadata: { ...t.metadata, graph_id: spec.graphId, assistant_id: run.assistant_id },
          config: threadConfig(spec.config),
        }));
      }
      runLog.debug('run started');
      const graph = await graphs.get(spec.graphId, spec.config);
      const options = {
        ...spec.config,
        streamMode: graphStreamModes(spec.modes),
        subgraphs: graphSubgraphs(spec.modes, spec.subgraphs),
        signal,
      };
      const streamsValues = spec.modes.includes('values');
      const onChunk = (chunk: unknown) => {
        for (const f of mapper.map(chunk)) events.push(f);
        const values = streamsValues ? undefined : rootValues(chunk);
        if (values !== undefined) events.state(values);
      };
      if (spec.protocol) {
        const { streamMode: _modes, subgraphs: _subgraphs, ...v3 } = options;
        const stream = await graph.streamEvents(spec.input, { ...v3, version: 'v3', runId: run.run_id });
        for await (const event of stream) {
          const f = protocolFrame(event);
          if (f !== null) events.push(f);
          if (!streamsValues && event.method === 'values' && event.params.namespace.length === 0)
            events.state(event.params.data);
        }
      } else if (spec.modes.includes('events')) {
        // `events` needs LangChain's callback events: the graph runs under streamEvents, whose root stream chunks
        // are the same as graph.stream's (a run without `events` skips that cost).
        for await (const event of graph.streamEvents(spec.input, { ...options, version: 'v2', runId: run.run_id })) {
          if (event.event === 'on_chain_stream' && event.run_id === run.run_id) onChunk(event.data?.chunk);
          else {
            const f = eventFrame(event, run.run_id);
            if (f !== null) events.push(f);
          }
        }
      } else for await (const chunk of await graph.stream(spec.input, options)) onChunk(chunk);
      state = await graph.getState({ configurable: { thread_id: threadId } }).catch(() => null);
    } catch (err) {
      const reason = cancelled();
      if (reason !== null) {
        status = 'interrupted';
        if (reason === 'rollback' || reason === 'cancel-rollback')
          events.push(
            frame('error', {
              error: 'CancelledError',
              message:
                reason === 'rollback'
                  ? 'Run rolled back: a newer run on this thread replaced it.'
                  : 'Run rolled back on request.',
            }),
          );
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
        error = failure(err);
        events.push(frame('error', error));
        runLog.warn({ err: error }, 'run failed');
      }
      const graph = await graphs.get(spec.graphId, spec.config).catch(() => null);
      state = graph ? await graph.getState({ configurable: { thread_id: threadId } }).catch(() => null) : null;
    }
    const reason = cancelled();
    if (reason === 'rollback' || reason === 'cancel-rollback') return this.rolledBack(spec, events, runLog);
    let values: unknown;
    try {
      values = state ? toPlain(state.values) : mapper.lastValues === undefined ? undefined : toPlain(mapper.lastValues);
      await this.setRun(run, status);
      if (spec.threadless && !spec.keepThread) await checkpointer.deleteThread(threadId);
      else await this.finishThread(spec, status, values, state);
    } catch (err) {
      runLog.error({ err: (err as Error)?.message }, 'could not record the run outcome');
      if (status !== 'error') {
        // The outcome could not be saved (e.g. values too deep to serialise): the run ends as `error`, said so.
        status = 'error';
        error = failure(err);
        events.push(frame('error', error));
        await this.setRun(run, status).catch(() => undefined);
      }
    } finally {
      events.close(status);
    }
    runLog.debug({ status }, 'run finished');
    return { status, values, error };
  }

  /** A rolled back run: its thread goes back to before it, the run is deleted (not recorded as ended). */
  private async rolledBack(spec: RunSpec, events: RunEvents, runLog: Logger): Promise<RunOutcome> {
    const { run } = spec;
    let values: unknown;
    try {
      if (spec.threadless && !spec.keepThread) await this.deps.checkpointer.deleteThread(run.thread_id);
      else {
        await rollBack(this.deps.checkpointer, run.thread_id, run.run_id);
        const graph = await this.deps.graphs.get(spec.graphId, spec.config);
        const state = await graph.getState({ configurable: { thread_id: run.thread_id } });
        values = state.createdAt === undefined ? undefined : toPlain(state.values);
        await this.finishThread(spec, 'success', values, state); // the state of before: a breakpoint there is one again
      }
      await this.deps.store.deleteRun(run.run_id);
      runLog.info('run rolled back');
    } catch (err) {
      runLog.error({ err: (err as Error)?.message }, 'could not roll the run back');
    } finally {
      events.close('interrupted');
    }
    return { status: 'interrupted', values, error: null };
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
    // As the official server: a run that ended with a next step still to run (a breakpoint, `interrupt_before` /
    // `interrupt_after`) or on an `interrupt()` leaves its thread waiting for a human: `interrupted`.
    // A cancelled run stops between steps too, with a next step, but nobody is asked anything: idle.
    const atBreakpoint = status === 'success' && (state?.next.length ?? 0) > 0;
    const waiting = Object.keys(interrupts).length > 0 || atBreakpoint;
    const threadStatus: ThreadStatus = status === 'error' ? 'error' : waiting ? 'interrupted' : 'idle';
    const stateUpdatedAt = new Date().toISOString();
    const patch = {
      status: threadStatus,
      values: (values ?? null) as Json | null,
      interrupts,
      state_updated_at: stateUpdatedAt,
    };
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
    else
      await this.setThread(spec.run.thread_id, { values: patch.values, interrupts, state_updated_at: stateUpdatedAt });
  }

  /** Another run is queued behind this one: the thread stays busy. */
  private busyAfter(threadId: string, runId: string): boolean {
    return this.queues.busyAfter(threadId, runId);
  }
}

/**
 * The config a thread keeps from its last run: its `configurable` without the user object (which may hold
 * credentials), the request headers and the run's own ids. A graph factory is called with it to read or update the thread's state,
 * so it builds the graph the runs had.
 */
function threadConfig(config: Record<string, unknown>): Json {
  const {
    service_auth_user: _s,
    langgraph_auth_user: _u,
    run_id: _r,
    checkpoint_id: _c,
    ...configurable
  } = (config.configurable ?? {}) as Record<string, unknown>;
  // Nor the request headers copied into it (configurable-headers.ts): the thread record is read by others.
  for (const key of Object.keys(configurable))
    if (key.startsWith('x-') || key === 'user-agent') delete configurable[key];
  return toPlain<Json>({ configurable });
}

/** A failure as a run's `error` (its name and message; never a stack). */
function failure(err: unknown): NonNullable<RunOutcome['error']> {
  return { error: (err as Error)?.name || 'Error', message: (err as Error)?.message || String(err) };
}

/** Resolves after `ms` (at once without), or when `signal` aborts. */
function delay(ms: number | undefined, signal: AbortSignal): Promise<void> {
  if (!ms || ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });
}

/** Resolves when `signal` aborts (and never if it does not). */
function whenAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) =>
    signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true }),
  );
}
