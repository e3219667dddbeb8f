import { Command } from '@langchain/langgraph';
import type { Context } from 'hono';
import { z } from 'zod';
import { findAssistant } from './assistant-lookup.ts';
import type { AgentEnv, RequestAuth } from '../auth/authenticate.ts';
import { matchesFilter } from '../auth/filters.ts';
import type { ServerContext } from '../context.ts';
import { notFound } from '../errors.ts';
import { newId } from '../ids.ts';
import { operation, param, type Operation } from './operations.ts';
import type { RunHandle, RunSpec } from '../runs/run-handle.ts';
import { errorSchema } from './common-schemas.ts';
import { runBatch, runCreate, runSchema, type RunCreate } from './run-schemas.ts';
import { STREAM_MODES, type StreamMode } from '../runs/stream-modes.ts';
import { sseResponse } from './sse.ts';
import { createThread } from './threads.ts';
import type { Json, Run } from '../store/records.ts';

/**
 * Runs: streamed (server-sent events), waited for, or started in the
 * background, on a thread or threadless. The stream's first event is
 * `metadata` with the run id; the response's Content-Location names the
 * run, and its Location the run's join stream, where the public client
 * resumes after a broken connection (`Last-Event-ID`, see run-control.ts). When the client goes away the run
 * is cancelled (`on_disconnect: cancel`, the default) or left to finish
 * (`continue`, the default of a `stream_resumable` run). The authenticated
 * user reaches the graph at `config.configurable.service_auth_user` (and
 * the public name `langgraph_auth_user`); it is never stored with the run.
 *
 * A background run (`POST /threads/{thread_id}/runs`, `POST /runs`) answers
 * its record at once and goes on without a client. It streams every mode
 * unless it names some (the public server's default), and a join of it
 * without `Last-Event-ID` replays it from its first event, so a client that
 * creates a run and then joins it misses nothing.
 */
const errors = {
  401: { description: 'Not authenticated.', schema: errorSchema },
  404: { description: 'Unknown assistant or thread.', schema: errorSchema },
  409: { description: 'The thread is busy and the multitask strategy is reject.', schema: errorSchema },
  422: { description: 'Invalid request (e.g. an unsupported stream_mode).', schema: errorSchema },
};
const streamAnswer = {
  description: `Server-sent events: \`metadata\` first, then one event per chunk of each requested mode (${STREAM_MODES.join(', ')}; \`messages\` gives messages/metadata, messages/partial, messages/complete), \`error\` on failure.`,
  contentType: 'text/event-stream',
  headers: {
    'Content-Location': 'The run: /runs/<run_id> or /threads/<thread_id>/runs/<run_id>.',
    Location:
      "The run's join stream (/runs/<run_id>/stream or /threads/<thread_id>/runs/<run_id>/stream), where the stream resumes (Last-Event-ID).",
  },
};
const createAnswer = {
  description:
    'The run, pending: it goes on in the background. Follow it at its join stream (`Content-Location` + `/stream`), wait for it with `/join`.',
  schema: runSchema,
  headers: { 'Content-Location': 'The run: /runs/<run_id> or /threads/<thread_id>/runs/<run_id>.' },
};
const waitAnswer = {
  description: 'The final state values of the run (on failure, `{"__error__": {"error", "message"}}`).',
  schema: z.record(z.string(), z.unknown()),
};

export function runOperations(ctx: ServerContext): Operation[] {
  const stream =
    (threaded: boolean) =>
    async (c: Context<AgentEnv>, { body }: { body: RunCreate }) => {
      const { handle, location, onDisconnect } = await startRun(
        c.get('auth'),
        ctx,
        body,
        threaded ? param(c, 'thread_id') : null,
      );
      return sseResponse(handle.frames, {
        headers: { 'Content-Location': location, Location: `${location}/stream` },
        heartbeatMs: ctx.heartbeatMs,
        signal: c.req.raw.signal,
        onCancel: () => (onDisconnect === 'continue' ? handle.detach() : handle.cancel('disconnect')),
      });
    };
  const wait =
    (threaded: boolean) =>
    async (c: Context<AgentEnv>, { body }: { body: RunCreate }) => {
      const { handle, location, onDisconnect } = await startRun(
        c.get('auth'),
        ctx,
        body,
        threaded ? param(c, 'thread_id') : null,
      );
      handle.detach();
      const signal = c.req.raw.signal;
      const gone = () => (onDisconnect === 'continue' ? undefined : handle.cancel('disconnect'));
      signal.addEventListener('abort', gone, { once: true });
      const outcome = await handle.done.finally(() => signal.removeEventListener('abort', gone));
      c.header('Content-Location', location);
      return c.json(outcome.error ? { __error__: outcome.error } : (outcome.values ?? {}));
    };
  const create =
    (threaded: boolean) =>
    async (c: Context<AgentEnv>, { body }: { body: RunCreate }) => {
      const { handle, location, run } = await startRun(
        c.get('auth'),
        ctx,
        body,
        threaded ? param(c, 'thread_id') : null,
        true,
      );
      handle.detach();
      c.header('Content-Location', location);
      return c.json(run);
    };
  /** Threadless background runs, all checked before any starts (an unknown assistant fails the whole batch). */
  const batch = async (c: Context<AgentEnv>, { body }: { body: RunCreate[] }) => {
    for (const one of body)
      if ((await findAssistant(ctx.store, ctx.graphs, one.assistant_id)) === null)
        throw notFound('Assistant', one.assistant_id);
    const runs: Run[] = [];
    for (const one of body) {
      const { handle, run } = await startRun(c.get('auth'), ctx, one, null, true);
      handle.detach();
      runs.push(run);
    }
    return c.json(runs);
  };
  const common = { tag: 'Runs', body: runCreate } as const;
  return [
    operation({
      ...common,
      method: 'post',
      path: '/runs/stream',
      operationId: 'stream_run_threadless',
      summary: 'Stream a threadless run',
      responses: { 200: streamAnswer, ...errors },
      handler: stream(false),
    }),
    operation({
      ...common,
      method: 'post',
      path: '/threads/{thread_id}/runs/stream',
      operationId: 'stream_run',
      summary: 'Stream a run on a thread',
      responses: { 200: streamAnswer, ...errors },
      handler: stream(true),
    }),
    operation({
      ...common,
      method: 'post',
      path: '/runs/wait',
      operationId: 'wait_run_threadless',
      summary: 'Run threadless and wait for the result',
      responses: { 200: waitAnswer, ...errors },
      handler: wait(false),
    }),
    operation({
      ...common,
      method: 'post',
      path: '/threads/{thread_id}/runs/wait',
      operationId: 'wait_run',
      summary: 'Run on a thread and wait for the result',
      responses: { 200: waitAnswer, ...errors },
      handler: wait(true),
    }),
    operation({
      ...common,
      method: 'post',
      path: '/runs',
      operationId: 'create_run_threadless',
      summary: 'Start a threadless run in the background',
      responses: { 200: createAnswer, ...errors },
      handler: create(false),
    }),
    operation({
      ...common,
      method: 'post',
      path: '/threads/{thread_id}/runs',
      operationId: 'create_run',
      summary: 'Start a run on a thread in the background',
      responses: { 200: createAnswer, ...errors },
      handler: create(true),
    }),
    operation({
      tag: 'Runs',
      method: 'post',
      path: '/runs/batch',
      operationId: 'create_runs_batch',
      summary: 'Start threadless runs in the background',
      description:
        'Each item is a run body (`runs.createBatch`); every assistant is checked before any run starts. Answers the runs, in order.',
      body: runBatch,
      responses: { 200: { description: 'The runs, pending.', schema: z.array(runSchema) }, ...errors },
      handler: batch,
    }),
  ];
}

interface Started {
  readonly run: Run;
  readonly handle: RunHandle;
  readonly location: string;
  readonly onDisconnect: 'cancel' | 'continue';
}

/** Starts a run as `auth`'s user (a request's, or a cron's creator): authorized, recorded, running. */
export async function startRun(
  auth: RequestAuth,
  ctx: ServerContext,
  body: RunCreate,
  threadId: string | null,
  background = false,
): Promise<Started> {
  const { store, graphs, runner } = ctx;
  const { user, authorize } = auth;
  const assistant = await findAssistant(store, graphs, body.assistant_id);
  if (assistant === null) throw notFound('Assistant', body.assistant_id);
  const runId = newId();
  const strategy = body.multitask_strategy ?? 'reject';
  const value: Json = {
    thread_id: threadId,
    assistant_id: assistant.assistant_id,
    run_id: runId,
    status: 'pending',
    metadata: { ...body.metadata },
    prevent_insert_if_inflight: true,
    multitask_strategy: strategy,
    if_not_exists: body.if_not_exists ?? 'reject',
    after_seconds: null,
    kwargs: { input: body.input ?? null, config: body.config ?? {}, context: body.context ?? {} },
  };
  const filter = await authorize('threads', 'create_run', value);
  if (threadId !== null) {
    const thread = await store.getThread(threadId);
    if (thread === null && body.if_not_exists === 'create') await createThread(auth, ctx, { thread_id: threadId });
    else if (thread === null || !matchesFilter(thread.metadata, filter)) throw notFound('Thread', threadId);
  }

  const modes = [
    ...new Set<StreamMode>(
      body.stream_mode == null ? (background ? STREAM_MODES : ['values']) : [body.stream_mode].flat(),
    ),
  ];
  const runThreadId = threadId ?? newId();
  const assistantConfig = assistant.config as { configurable?: Json; tags?: string[]; recursion_limit?: number };
  const metadata = {
    ...(value.metadata as Json),
    run_id: runId,
    assistant_id: assistant.assistant_id,
    graph_id: assistant.graph_id,
    ...(threadId ? { thread_id: threadId } : {}),
  };
  const context = { ...assistant.context, ...body.context };
  const config: Record<string, unknown> = {
    configurable: {
      ...assistantConfig.configurable,
      ...body.config?.configurable,
      ...(body.checkpoint_id ? { checkpoint_id: body.checkpoint_id } : {}),
      thread_id: runThreadId,
      run_id: runId,
      assistant_id: assistant.assistant_id,
      graph_id: assistant.graph_id,
      service_auth_user: user,
      langgraph_auth_user: user,
    },
    metadata,
    tags: [...(assistantConfig.tags ?? []), ...(body.config?.tags ?? [])],
    recursionLimit: body.config?.recursion_limit ?? assistantConfig.recursion_limit ?? 25,
    ...(Object.keys(context).length > 0 ? { context } : {}),
    ...(body.interrupt_before ? { interruptBefore: body.interrupt_before } : {}),
    ...(body.interrupt_after ? { interruptAfter: body.interrupt_after } : {}),
  };
  const now = new Date().toISOString();
  const run: Run = {
    run_id: runId,
    thread_id: runThreadId,
    assistant_id: assistant.assistant_id,
    created_at: now,
    updated_at: now,
    status: 'pending',
    metadata,
    // The request as given; the user object is added to the config only, never stored.
    kwargs: {
      input: body.input ?? null,
      command: body.command ?? null,
      config: body.config ?? {},
      context: body.context ?? {},
      stream_mode: modes,
    },
    multitask_strategy: strategy,
  };
  const spec: RunSpec = {
    run,
    graphId: assistant.graph_id,
    input: body.command ? new Command(body.command as ConstructorParameters<typeof Command>[0]) : (body.input ?? null),
    config,
    modes,
    subgraphs: body.stream_subgraphs ?? false,
    threadless: threadId === null,
    keepThread: body.on_completion === 'keep',
    strategy,
    resumable: background || (body.stream_resumable ?? false),
    startedBy: user.identity,
  };
  const handle = runner.start(spec);
  return {
    run,
    handle,
    location: threadId === null ? `/runs/${runId}` : `/threads/${threadId}/runs/${runId}`,
    onDisconnect: body.on_disconnect ?? (body.stream_resumable ? 'continue' : 'cancel'),
  };
}
