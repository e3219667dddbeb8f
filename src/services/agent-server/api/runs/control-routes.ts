import type { Context } from 'hono';
import { z } from 'zod';
import type { AgentEnv } from '../../auth/authenticate.ts';
import { matchesFilter, type Action } from '../../auth/filters.ts';
import type { ServerContext } from '../../context.ts';
import { ApiError, conflict, notFound } from '../../errors.ts';
import { frame, onlyModes, type Frame } from '../../runs/frames.ts';
import { LAST_EVENT_ID, lastEventId } from './last-event-id.ts';
import { isUnfinished, settleIfOrphaned } from '../../runs/orphans.ts';
import { operation, param, type Operation } from '../operations.ts';
import { cancelElsewhere } from '../../relay/cancel-elsewhere.ts';
import { errorSchema } from '../common-schemas.ts';
import { runCancel, runJoinStream, runSchema } from './schemas.ts';
import { STREAM_MODES } from '../../runs/stream-modes.ts';
import { sseResponse } from '../sse.ts';
import { visibleThread } from '../threads/thread-access.ts';
import type { Json, Run } from '../../store/records.ts';

/**
 * Operations on a run that exists: read it, cancel it, wait for it (join),
 * follow its events (join stream), delete its record. A run is addressed
 * through its thread, so the `threads` authorization handlers decide: a
 * thread the caller may not see answers 404, and so does a run of another
 * thread. A run on another server process sharing the store can be waited
 * for (`join`, polling the store), cancelled (through the relay, at once)
 * and followed (its frames read from the relay, relay/run-relay.ts); only
 * without a shared relay are its events followed on its own server alone
 * (409 here). A run that has finished is answered from the
 * store; one that lost its server is settled as `error` when read
 * (runs/orphans.ts).
 *
 * Following resumes: every frame of a run carries `id: <n>`, its number in
 * the run, and a request with `Last-Event-ID: <n>` gets every frame after
 * it that is still held, then the rest live, with nothing lost or repeated.
 * The public client sends it by itself when a stream breaks (it reconnects
 * to the run stream's Location). Frames stay for a minute after the run
 * ends (runs/frame-retention.ts).
 */
const errors = {
  401: { description: 'Not authenticated.', schema: errorSchema },
  404: { description: 'Unknown thread or run (or not visible to the caller).', schema: errorSchema },
  422: { description: 'Invalid request.', schema: errorSchema },
};
const common = { tag: 'Runs' } as const;
/** What both join streams (on a thread, threadless) take and answer. */
const joinStream = {
  ...common,
  method: 'get',
  query: runJoinStream,
  headers: { 'Last-Event-ID': LAST_EVENT_ID },
  responses: {
    200: { description: 'Server-sent events.', contentType: 'text/event-stream' },
    ...errors,
    409: {
      description:
        'The run is going on in another server process of this deployment, and the servers share no run relay (no Redis): its events can be followed only there.',
      schema: errorSchema,
    },
  },
} as const;

/** The run of the path, if its thread exists and the caller may `action` it; 404 otherwise. */
async function visibleRun(c: Context<AgentEnv>, ctx: ServerContext, action: Action, value: Json = {}): Promise<Run> {
  const threadId = param(c, 'thread_id');
  const runId = param(c, 'run_id');
  const thread = await visibleThread(c, ctx, threadId, action, { thread_id: threadId, ...value });
  const run = await ctx.store.getRun(runId);
  if (run === null || run.thread_id !== thread.thread_id) throw notFound('Run', runId);
  return settleIfOrphaned(ctx, run);
}

async function* noFrames(): AsyncGenerator<Frame> {}

/**
 * A run the caller may not see (or that is not there), joined as a stream: as the official servers do, the stream
 * opens and sends one `error` event saying 404 (the public client's joinStream yields it rather than throwing).
 */
async function joinOrNotFound(c: Context<AgentEnv>, ctx: ServerContext, join: () => Promise<Response>) {
  try {
    return await join();
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 404) throw err;
    const frames = (async function* () {
      yield frame('error', { error: 'Error', message: `404: ${err.message}` });
    })();
    return sseResponse(frames, { headers: {}, heartbeatMs: ctx.heartbeatMs, onCancel: () => undefined });
  }
}

/**
 * A threadless run (`GET /runs/{run_id}/stream`): its thread is temporary, so
 * the `threads:read` filter is matched against the run's own metadata (where
 * a `create_run` handler may write, e.g., an owner), or a kept thread's once
 * it exists; the user who started the run may always follow it. 404 otherwise.
 */
async function visibleThreadlessRun(c: Context<AgentEnv>, ctx: ServerContext): Promise<Run> {
  const runId = param(c, 'run_id');
  const { user, authorize } = c.get('auth');
  const filter = await authorize('threads', 'read', { run_id: runId });
  const run = await ctx.store.getRun(runId);
  if (run === null) throw notFound('Run', runId);
  const thread = await ctx.store.getThread(run.thread_id);
  const starter = ctx.runner.followable(runId)?.startedBy === user.identity;
  if (!starter && !matchesFilter(thread?.metadata ?? run.metadata, filter)) throw notFound('Run', runId);
  return settleIfOrphaned(ctx, run);
}

/** A run going on in another server process of this deployment (its lease is held there). */
const elsewhere = (ctx: ServerContext, run: Run) => ctx.runner.find(run.run_id) === undefined && isUnfinished(run);

/**
 * The frames of a run that does not go on here, through the relay (from the entry after `seen`, or from now), until
 * its end; null when the relay cannot follow runs of other servers.
 */
function followElsewhere(
  ctx: ServerContext,
  c: Context<AgentEnv>,
  run: Run,
  seen: number | undefined,
): AsyncIterable<Frame> | null {
  return ctx.relay.follow(run.run_id, {
    seen,
    signal: c.req.raw.signal,
    async stillGoing() {
      const now = await ctx.store.getRun(run.run_id);
      return now !== null && isUnfinished(await settleIfOrphaned(ctx, now));
    },
  });
}

/** Started with `stream_resumable` (recorded in its kwargs): a join without Last-Event-ID replays it from its start. */
const resumable = (run: Run) => (run.kwargs as { stream_resumable?: unknown } | null)?.stream_resumable === true;

/** Waits until a run on another server has ended (or lost its server, or the client left), polling the store. */
async function untilFinished(ctx: ServerContext, run: Run, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const now = await ctx.store.getRun(run.run_id);
    if (now === null || !elsewhere(ctx, await settleIfOrphaned(ctx, now))) return;
  }
}

export function runControlOperations(ctx: ServerContext): Operation[] {
  const { store, runner, heartbeatMs } = ctx;
  /** A run's events as SSE, from now, or resumed (`Last-Event-ID`, or from the start for a `stream_resumable` run). */
  const follow = (c: Context<AgentEnv>, run: Run, query: z.output<typeof runJoinStream>, location: string) => {
    const seen = lastEventId(c);
    const headers = { 'Content-Location': location };
    const handle = runner.followable(run.run_id);
    if (handle === undefined) {
      const relayed = followElsewhere(ctx, c, run, seen ?? (resumable(run) ? 0 : undefined));
      if (relayed === null && elsewhere(ctx, run)) {
        throw conflict(
          `Run ${run.run_id} is running on another server of this deployment: its events can be followed only there. Wait for it with /join, or read the thread's state when it ends.`,
        );
      }
      const frames = relayed ?? noFrames();
      return sseResponse(query.stream_mode ? onlyModes(frames, query.stream_mode) : frames, {
        headers,
        heartbeatMs,
        signal: c.req.raw.signal,
        onCancel() {
          if (query.cancel_on_disconnect && elsewhere(ctx, run)) void ctx.relay.cancel(run.run_id, 'cancel');
        },
      });
    }
    const reader = handle.join(seen ?? (handle.resumable ? 0 : undefined));
    return sseResponse(query.stream_mode ? onlyModes(reader.frames, query.stream_mode) : reader.frames, {
      headers,
      heartbeatMs,
      signal: c.req.raw.signal,
      onCancel() {
        reader.leave();
        if (query.cancel_on_disconnect) handle.cancel('disconnect');
      },
    });
  };
  return [
    operation({
      ...common,
      method: 'get',
      path: '/threads/{thread_id}/runs/{run_id}',
      operationId: 'get_run',
      summary: 'Get a run',
      responses: { 200: { description: 'The run.', schema: runSchema }, ...errors },
      handler: async (c) => c.json(await visibleRun(c, ctx, 'read')),
    }),
    operation({
      ...common,
      method: 'post',
      path: '/threads/{thread_id}/runs/{run_id}/cancel',
      operationId: 'cancel_run',
      summary: 'Cancel a run',
      description:
        'A queued or running run stops: status `interrupted`, and an `error` event (CancelledError) ends its streams. With `action=rollback` the run is deleted instead and its thread goes back to its state before the run. Cancelling a finished run changes nothing.',
      query: runCancel,
      responses: {
        202: { description: 'Cancellation requested.' },
        204: { description: 'The run has stopped (wait=1).' },
        ...errors,
      },
      async handler(c, { query }) {
        const run = await visibleRun(c, ctx, 'update', { run_id: param(c, 'run_id'), action: query.action });
        const handle = runner.find(run.run_id);
        handle?.cancel(query.action === 'rollback' ? 'cancel-rollback' : 'cancel');
        // A run on another server: the relay tells its server at once; the lease is the fallback it sees when it next
        // renews the run's lease, should the relay's message be lost.
        if (elsewhere(ctx, run)) await cancelElsewhere(ctx, run.run_id, query.action === 'rollback');
        if (!query.wait) return c.body(null, 202);
        if (handle !== undefined) await handle.done.catch(() => undefined);
        else if (elsewhere(ctx, run)) await untilFinished(ctx, run, c.req.raw.signal);
        return c.body(null, 204);
      },
    }),
    operation({
      ...common,
      method: 'get',
      path: '/threads/{thread_id}/runs/{run_id}/join',
      operationId: 'join_run',
      summary: 'Wait for a run',
      description:
        'Answers when the run has finished (at once if it has): the final state values of the thread (on failure, `{"__error__": {"error", "message"}}`).',
      responses: {
        200: { description: 'The final state values.', schema: z.record(z.string(), z.unknown()) },
        ...errors,
      },
      async handler(c) {
        const run = await visibleRun(c, ctx, 'read');
        if (elsewhere(ctx, run)) await untilFinished(ctx, run, c.req.raw.signal);
        const outcome = await runner.find(run.run_id)?.done.catch(() => undefined);
        if (outcome?.error) return c.json({ __error__: outcome.error });
        if (outcome?.values != null) return c.json(outcome.values);
        return c.json((await store.getThread(run.thread_id))?.values ?? {});
      },
    }),
    operation({
      ...joinStream,
      path: '/threads/{thread_id}/runs/{run_id}/stream',
      operationId: 'join_run_stream',
      summary: 'Follow the events of a run',
      description: `Server-sent events of the run until it ends, as its own stream sends them (${STREAM_MODES.join(', ')}; \`error\` on failure or cancellation), each with its \`id\`. With \`Last-Event-ID\`: every frame after that one, then the rest. Without: from the moment of joining, or from the first frame for a \`stream_resumable\` run. A run's frames stay for a minute after it ends; after that, its stream ends at once.`,
      handler: (c, { query }) =>
        joinOrNotFound(c, ctx, async () => {
          const run = await visibleRun(c, ctx, 'read');
          return follow(c, run, query, `/threads/${run.thread_id}/runs/${run.run_id}`);
        }),
    }),
    operation({
      ...joinStream,
      path: '/runs/{run_id}/stream',
      operationId: 'join_run_stream_threadless',
      summary: 'Follow the events of a threadless run',
      description: `The same as a thread run's stream, for a run started by \`POST /runs/stream\` (its stream's Location points here).`,
      handler: (c, { query }) =>
        joinOrNotFound(c, ctx, async () =>
          follow(c, await visibleThreadlessRun(c, ctx), query, `/runs/${param(c, 'run_id')}`),
        ),
    }),
    operation({
      ...common,
      method: 'delete',
      path: '/threads/{thread_id}/runs/{run_id}',
      operationId: 'delete_run',
      summary: 'Delete a run',
      description:
        'Removes the record of a finished run (the thread state stays). A queued or running run answers 409: cancel it first.',
      responses: {
        204: { description: 'Deleted.' },
        ...errors,
        409: { description: 'The run is queued or running.', schema: errorSchema },
      },
      async handler(c) {
        const run = await visibleRun(c, ctx, 'delete', { run_id: param(c, 'run_id') });
        if (runner.find(run.run_id) !== undefined)
          throw conflict(
            `Run ${run.run_id} is still ${run.status === 'pending' ? 'queued' : 'running'}: cancel it before deleting it.`,
          );
        await store.deleteRun(run.run_id);
        return c.body(null, 204);
      },
    }),
  ];
}
