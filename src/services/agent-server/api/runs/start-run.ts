import { Command } from '@langchain/langgraph';
import type { RequestAuth } from '../../auth/authenticate.ts';
import { matchesFilter } from '../../auth/filters.ts';
import type { ServerContext } from '../../context.ts';
import { notFound } from '../../errors.ts';
import { newId } from '../ids.ts';
import type { RunHandle, RunSpec } from '../../runs/run-handle.ts';
import { BACKGROUND_STREAM_MODES, type StreamMode } from '../../runs/stream-modes.ts';
import type { Json, Run } from '../../store/records.ts';
import { findAssistant } from '../assistants/lookup.ts';
import type { RunCreate } from './schemas.ts';
import { configurableHeaders } from './configurable-headers.ts';
import { createThread } from '../threads/thread-access.ts';
import { checkWebhook } from './webhook-check.ts';
import { takeThreadTurn, type ThreadTurn } from '../../relay/thread-elsewhere.ts';

interface Started {
  readonly run: Run;
  readonly handle: RunHandle;
  readonly location: string;
  readonly onDisconnect: 'cancel' | 'continue';
}

/**
 * Starts a run as `auth`'s user (a request's, or a cron's creator): authorized, recorded, running. `headers`: the
 * request's, whose `x-*` and `user-agent` reach `config.configurable` (configurable-headers.ts). With `after_seconds`
 * the run is recorded `pending` at once and starts that much later (cancellable meanwhile).
 */
export async function startRun(
  auth: RequestAuth,
  ctx: ServerContext,
  body: RunCreate,
  threadId: string | null,
  background = false,
  headers?: Headers,
  /** Started through the thread-centric protocol (protocol/run-commands.ts): its frames are protocol events. */
  protocol?: { readonly gate: Promise<unknown> },
): Promise<Started> {
  const { store, graphs, runner } = ctx;
  const { user, authorize } = auth;
  const assistant = await findAssistant(store, graphs, body.assistant_id);
  if (assistant === null) throw notFound('Assistant', body.assistant_id);
  await checkWebhook(ctx, body.webhook);
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
    after_seconds: body.after_seconds ?? null,
    kwargs: { input: body.input ?? null, config: body.config ?? {}, context: body.context ?? {} },
  };
  const filter = await authorize('threads', 'create_run', value);
  if (threadId !== null) {
    const thread = await store.getThread(threadId);
    let bound = thread;
    if (thread === null && body.if_not_exists === 'create')
      bound = await createThread(auth, ctx, { thread_id: threadId });
    else if (thread === null || !matchesFilter(thread.metadata, filter)) throw notFound('Thread', threadId);
    // The thread is bound to the run's graph as the run is created (as the official server does), not when it starts:
    // a state update while the first run is queued or in flight finds the graph (and answers "busy", not "no graph").
    if (bound !== null && !runner.busy(threadId) && bound.metadata.graph_id !== assistant.graph_id) {
      await store.putThread({
        ...bound,
        metadata: { ...bound.metadata, graph_id: assistant.graph_id, assistant_id: assistant.assistant_id },
      });
    }
  }

  const asked = [body.stream_mode ?? []].flat();
  const modes = [...new Set<StreamMode>(asked.length > 0 ? asked : background ? BACKGROUND_STREAM_MODES : ['values'])];
  const runThreadId = threadId ?? newId();
  const assistantConfig = assistant.config as { configurable?: Json; tags?: string[]; recursion_limit?: number };
  // The config's metadata reaches the graph (and its tracer) under the run's; the run's own ids win over both.
  const metadata = {
    ...body.config?.metadata,
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
      ...configurableHeaders(headers, ctx.configurableHeaders),
      ...body.config?.configurable,
      ...checkpointOf(body),
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
    ...(body.config?.run_name ? { runName: body.config.run_name } : {}),
    ...(body.config?.max_concurrency ? { maxConcurrency: body.config.max_concurrency } : {}),
    ...(Object.keys(context).length > 0 ? { context } : {}),
    ...(body.interrupt_before ? { interruptBefore: body.interrupt_before } : {}),
    ...(body.interrupt_after ? { interruptAfter: body.interrupt_after } : {}),
    ...durabilityOf(body),
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
      ...(body.webhook ? { webhook: body.webhook } : {}),
      // Read by a server that follows the run from elsewhere (a join without Last-Event-ID replays such a run).
      ...(background || body.stream_resumable ? { stream_resumable: true } : {}),
      // A protocol run: a server following it from elsewhere turns its frames into protocol events (relay/remote-runs.ts).
      ...(protocol ? { protocol: true } : {}),
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
    ...(protocol ? { protocol: true, gate: protocol.gate } : {}),
    ...(body.after_seconds ? { afterMs: Math.round(body.after_seconds * 1000) } : {}),
    ...(body.webhook ? { webhook: body.webhook } : {}),
  };
  // With no run of the thread here, the thread is claimed from the other servers sharing the store (or waited for).
  const turn = threadId !== null && !runner.busy(threadId) ? await takeThreadTurn(ctx, threadId, strategy) : undefined;
  const handle = startOnThread(ctx, spec, turn);
  await handle.recorded;
  return {
    run,
    handle,
    location: threadId === null ? `/runs/${runId}` : `/threads/${threadId}/runs/${runId}`,
    // As the official server today: the client leaving no longer cancels the run unless it asked for that.
    onDisconnect: body.on_disconnect ?? 'continue',
  };
}

/** Starts the run (waiting for its `turn` on a thread another server runs); a thread claimed for nothing is let go. */
function startOnThread(ctx: ServerContext, spec: RunSpec, turn: ThreadTurn): RunHandle {
  try {
    return ctx.runner.start(turn ? { ...spec, turn } : spec);
  } catch (err) {
    const threadId = spec.run.thread_id;
    if (!spec.threadless && !ctx.runner.busy(threadId)) ctx.relay.releaseThread(threadId);
    throw err;
  }
}

/** The checkpoint a run starts from (`checkpoint`, or `checkpoint_id`), as configurable keys; none: the latest. */
function checkpointOf(body: RunCreate): Record<string, unknown> {
  const { checkpoint_id, checkpoint_ns, checkpoint_map } = (body.checkpoint ?? {}) as Record<string, unknown>;
  const id = body.checkpoint_id ?? checkpoint_id;
  return {
    ...(typeof id === 'string' && id !== '' ? { checkpoint_id: id } : {}),
    ...(typeof checkpoint_ns === 'string' && checkpoint_ns !== '' ? { checkpoint_ns } : {}),
    ...(typeof checkpoint_map === 'object' && checkpoint_map !== null ? { checkpoint_map } : {}),
  };
}

/** `durability`, or the deprecated `checkpoint_during` (false: exit, true: async); nothing: LangGraph's default. */
function durabilityOf(body: RunCreate): { durability?: 'sync' | 'async' | 'exit' } {
  if (body.durability) return { durability: body.durability };
  if (body.checkpoint_during != null) return { durability: body.checkpoint_during ? 'async' : 'exit' };
  return {};
}
