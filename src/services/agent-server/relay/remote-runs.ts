import type { ServerContext } from '../context.ts';
import { frame, type Frame } from '../runs/frames.ts';
import { isUnfinished, settleIfOrphaned } from '../runs/orphans.ts';
import type { RunHandle, RunOutcome } from '../runs/run-handle.ts';
import type { Run } from '../store/records.ts';

/**
 * Runs of a thread that go on on another server, brought to the readers of this one: the thread's stream
 * (`GET /threads/{id}/stream`) and the protocol's events (`stream/events`) are made per server from the runs they see,
 * so a reader that opens one here while a run of the thread goes on elsewhere gets that run's frames from the relay.
 * A run that starts elsewhere after the reader opened is not brought (the reader sees it once it opens again).
 */

/** The thread's run going on on another server (not queued: running), if any. */
export async function runningElsewhere(ctx: ServerContext, threadId: string): Promise<Run | null> {
  if (!ctx.relay.shared) return null;
  for (const run of await ctx.store.listRuns(threadId)) {
    if (run.status !== 'running' || ctx.runner.find(run.run_id) !== undefined) continue;
    if (isUnfinished(await settleIfOrphaned(ctx, run))) return run;
  }
  return null;
}

/**
 * A run of another server as a handle to read (its frames from the relay, from frame `seen` or from now; its outcome
 * from the store once its frames end). Nothing else of it is here: cancelling it is the relay's (relay.cancel).
 */
export function relayedRun(ctx: ServerContext, run: Run, seen: number | undefined): RunHandle {
  const stop = new AbortController();
  let ended: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (ended = resolve));
  const source = ctx.relay.follow(run.run_id, {
    seen,
    signal: stop.signal,
    async stillGoing() {
      const now = await ctx.store.getRun(run.run_id);
      return now !== null && isUnfinished(await settleIfOrphaned(ctx, now));
    },
  });
  const frames = (async function* (): AsyncGenerator<Frame> {
    try {
      if (source !== null) yield* source;
    } catch (err) {
      ctx.log.warn({ run_id: run.run_id, err: (err as Error)?.message }, 'could not follow a run of another server');
    } finally {
      ended();
    }
  })();
  const done: Promise<RunOutcome> = finished.then(async () => {
    const status = (await ctx.store.getRun(run.run_id))?.status ?? 'error';
    return { status: isUnfinished({ ...run, status }) ? 'error' : status, values: undefined, error: null };
  });
  const settled = Promise.resolve();
  return {
    runId: run.run_id,
    frames,
    done,
    recorded: settled,
    resumable: false,
    startedBy: '',
    cancel: () => undefined,
    detach: () => stop.abort(),
    join: () => ({ frames: (async function* () {})(), leave: () => undefined }),
  };
}

/** Runs of other servers whose frames this server brings to its thread streams now (each once). */
const pumping = new WeakMap<ServerContext, Set<string>>();

/**
 * A reader opened the thread's stream here: the thread's run going on elsewhere, if any, goes to this server's thread
 * stream from now on, then its `run_done`, as a run of this server would.
 */
export async function bringToThreadStream(ctx: ServerContext, threadId: string): Promise<void> {
  const run = await runningElsewhere(ctx, threadId);
  if (run === null) return;
  const runs = pumping.get(ctx) ?? new Set<string>();
  pumping.set(ctx, runs);
  if (runs.has(run.run_id)) return;
  runs.add(run.run_id);
  const handle = relayedRun(ctx, run, undefined);
  const { threads } = ctx.runner;
  threads.runStarted(threadId);
  void (async () => {
    try {
      for await (const f of handle.frames) threads.publish(threadId, { event: f.event, data: f.data });
      const { status } = await handle.done;
      threads.publish(threadId, frame('run_done', { run_id: run.run_id, status }));
    } finally {
      threads.runEnded(threadId);
      runs.delete(run.run_id);
    }
  })();
}
