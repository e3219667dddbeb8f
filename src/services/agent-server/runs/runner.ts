import { Broadcast } from './broadcast.ts';
import { conflict } from '../errors.ts';
import { frame, type Frame } from './frames.ts';
import { FinishedRuns, RETAINED_MS, runFrameBounds, threadFrameBounds } from './frame-retention.ts';
import { RunExecution, type RunEvents, type RunnerDeps } from './run-execution.ts';
import type { CancelReason, RunHandle, RunOutcome, RunSpec } from './run-handle.ts';
import { LeaseRenewals } from './run-leases.ts';
import { ThreadStreams } from './thread-broadcasts.ts';
import { ThreadQueues } from './thread-queues.ts';
import { webhookPayload } from './webhook-payload.ts';

/**
 * Runs graphs. Each run streams its events (metadata first) to the
 * response that started it; the run itself goes on in the background
 * and records its outcome on the run and its thread. One run at a time per
 * thread: a second one answers 409 unless its multitask strategy cancels
 * the active run (`interrupt`; `rollback` also deletes it and puts its
 * thread back as it was before it) or waits for it (`enqueue`).
 * Other clients can join a run's events while it goes on (`join`), and a
 * client that lost its stream can resume it: every frame carries an `id`
 * (its number in the run), the last frames of each run are held (see
 * frame-retention.ts), and a finished run's frames stay for RETAINED_MS after its end.
 * The frames of a thread's runs also go to the thread's stream (`threads`).
 *
 * Several servers may share one store. While a run goes on, its server
 * renews the run's lease in the store (`run:<id>`, see LEASE_MS): a run
 * recorded as running without a lease has lost its server (orphans.ts).
 * Its frames also go to the relay (relay/run-relay.ts), so any server of
 * the deployment can follow it, and a cancel asked on another server
 * arrives through the relay at once (and as a `cancel:<id>` lease, which
 * its server looks for at each renewal, if the relay lost it).
 *
 * The jobs live apart: the queue per thread (thread-queues.ts), running a
 * graph and recording its outcome (run-execution.ts), the frames held for
 * resuming readers (frame-retention.ts) and the leases (run-leases.ts).
 */
export class Runner {
  private readonly queues = new ThreadQueues();
  /** Every run not yet finished, by run id. */
  private readonly all = new Map<string, RunHandle>();
  private readonly finished = new FinishedRuns();
  private readonly held = runFrameBounds();
  /** Each thread's stream: the frames of its runs, one run after the other. */
  readonly threads = new ThreadStreams(threadFrameBounds(), RETAINED_MS);

  private readonly leases: LeaseRenewals;
  private readonly execution: RunExecution;

  constructor(private readonly deps: RunnerDeps) {
    this.leases = new LeaseRenewals(deps.store, deps.log, () => this.all.values());
    this.execution = new RunExecution(deps, this.queues);
    deps.relay.onCancel((runId, reason) => this.all.get(runId)?.cancel(reason));
  }

  /** True while a run is active or queued on the thread. */
  busy(threadId: string): boolean {
    return this.queues.busy(threadId);
  }

  /** The run while it is queued or running; undefined once it has finished (or on another server). */
  find(runId: string): RunHandle | undefined {
    return this.all.get(runId);
  }

  /** The run while it goes on, or for RETAINED_MS after its end: what a joining or resuming reader follows. */
  followable(runId: string): RunHandle | undefined {
    return this.all.get(runId) ?? this.finished.get(runId);
  }

  /** The thread's active run and the runs queued behind it. */
  onThread(threadId: string): RunHandle[] {
    return this.queues.onThread(threadId);
  }

  /** Starts `spec` (synchronously claims its thread: call it with no await after the busy check). */
  start(spec: RunSpec): RunHandle {
    const threadId = spec.run.thread_id;
    const ahead = spec.threadless ? [] : this.queues.onThread(threadId);
    if (ahead.length > 0 && spec.strategy === 'reject') {
      throw conflict(
        'Thread is already running a task. Wait for it to finish or choose a different multitask strategy.',
      );
    }
    if (spec.strategy === 'interrupt') for (const h of ahead) h.cancel('interrupt');
    if (spec.strategy === 'rollback') for (const h of ahead) h.cancel('rollback');
    const before = Promise.all(ahead.map((h) => h.done.catch(() => undefined)));

    const events = new Broadcast<Frame>(this.held);
    const metadata = frame('metadata', { run_id: spec.run.run_id, attempt: 1 });
    let thread: string | null = null; // set once the run begins: a queued run shows on its thread's stream when its turn comes
    let startedAt: string | null = null;
    if (!spec.threadless) this.threads.runStarted(threadId);
    const numbered: RunEvents = {
      push: (f) => {
        const numberedFrame = { ...f, id: String(events.count) }; // ids from 0, as the official server
        events.push(numberedFrame);
        this.deps.relay.publish(spec.run.run_id, numberedFrame);
        if (thread !== null) this.threads.publish(thread, f);
      },
      begin: () => {
        startedAt = new Date().toISOString();
        if (spec.threadless) return;
        thread = threadId;
        this.threads.publish(thread, metadata);
      },
      state: (values) => {
        if (thread !== null) this.threads.publish(thread, frame('values', values), ['state_update']);
      },
      close: (status) => {
        events.close();
        this.deps.relay.ended(spec.run.run_id);
        if (thread !== null) this.threads.publish(thread, frame('run_done', { run_id: spec.run.run_id, status }));
        if (!spec.threadless) this.threads.runEnded(threadId);
      },
    };
    const first = events.subscribe();
    const controller = new AbortController();
    let cancelReason: CancelReason | null = null;
    this.deps.relay.started(spec.run.run_id, threadId);
    numbered.push(metadata);
    const recorded = this.execution.record(spec.run);
    // `done` never rejects: execute ends every failure as an `error` outcome, and this catch is the last guard (a
    // rejected background promise nobody awaits would be an unhandledRejection).
    const done = this.execution
      .execute(spec, numbered, controller.signal, () => cancelReason, before, recorded)
      .catch((err: unknown) => this.lost(spec, numbered, err));
    const handle: RunHandle = {
      runId: spec.run.run_id,
      frames: first,
      recorded,
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
    if (!spec.threadless) this.queues.add(threadId, handle);
    void done.then((outcome) => {
      this.all.delete(handle.runId);
      // A threadless run's record goes with its frames, as its temporary thread went at its end (the official
      // server deletes both at once): nothing of it piles up under sustained load. `on_completion: keep` keeps both.
      const forgetRecord =
        spec.threadless && !spec.keepThread
          ? () => void this.deps.store.deleteRun(handle.runId).catch(() => undefined)
          : undefined;
      this.finished.retain(handle, events, forgetRecord);
      this.queues.remove(threadId, handle);
      // The thread's last run here: another server sharing the store may run it now.
      if (!spec.threadless && !this.queues.busy(threadId)) this.deps.relay.releaseThread(threadId);
      // After the run's end is recorded, in the background: nothing waits for the call.
      if (spec.webhook) this.deps.webhooks.send(spec.webhook, webhookPayload(spec, outcome, startedAt), handle.runId);
    });
    return handle;
  }

  /** A run whose execution itself failed (a bug): logged with its stack, ended as `error`. */
  private lost(spec: RunSpec, events: RunEvents, err: unknown): RunOutcome {
    const error = { error: (err as Error)?.name || 'Error', message: (err as Error)?.message || String(err) };
    this.deps.log.error({ run_id: spec.run.run_id, err: { ...error, stack: (err as Error)?.stack } }, 'run lost');
    try {
      events.push(frame('error', error));
      events.close('error');
    } catch {
      // the run's readers are gone already
    }
    return { status: 'error', values: undefined, error };
  }

  /** Cancels every run and waits for them to wind down. */
  async close(): Promise<void> {
    this.leases.stop();
    const handles = [...this.all.values()];
    for (const h of handles) h.cancel('shutdown');
    await Promise.all(handles.map((h) => h.done.catch(() => undefined)));
    this.finished.clear();
    this.threads.close();
  }
}
