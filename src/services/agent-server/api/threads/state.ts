import type { CheckpointMetadata } from '@langchain/langgraph-checkpoint';
import type { Context } from 'hono';
import { z } from 'zod';
import type { AgentEnv } from '../../auth/authenticate.ts';
import type { ServerContext } from '../../context.ts';
import { conflict, invalid, notFound } from '../../errors.ts';
import { interruptsOf, type RunnableGraph, type StateSnapshotLike } from '../../graphs.ts';
import { operation, param, type Operation } from '../operations.ts';
import { errorSchema } from '../common-schemas.ts';
import {
  threadHistory,
  threadHistoryQuery,
  threadStateAt,
  threadStatePatch,
  threadStateQuery,
  threadStateSchema,
  threadStateUpdate,
} from './state-schemas.ts';
import { toPlain } from '../../serialize.ts';
import { visibleThread } from './threads.ts';
import type { Json, Thread } from '../../store/records.ts';

/**
 * A thread's state, as the checkpointer keeps it: the current state, the
 * state at a checkpoint, the history (one state per checkpoint, newest
 * first: what the JS client's React `useStream` loads), and updates made
 * by hand (`threads.updateState`, e.g. a human editing what an agent is
 * about to do), and metadata added to the latest checkpoint (`patchState`). Reads need `threads:read`, updates
 * `threads:update`.
 */
const errors = {
  401: { description: 'Not authenticated.', schema: errorSchema },
  404: { description: 'Unknown thread or checkpoint (or not visible to the caller).', schema: errorSchema },
  422: { description: 'Invalid request.', schema: errorSchema },
};
const stateAnswer = { 200: { description: 'The state.', schema: threadStateSchema }, ...errors };
const historyOperation = {
  path: '/threads/{thread_id}/history',
  summary: 'Get the past states of a thread',
  description:
    "The states the thread went through, one per checkpoint, newest first (the first is the current state): what the JS client's `threads.getHistory` and its React `useStream` load. An empty list before the first run.",
  tag: 'Threads',
  responses: { 200: { description: 'States, newest first.', schema: z.array(threadStateSchema) }, ...errors },
} as const;

type CheckpointRef = {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  checkpoint_map: unknown;
} | null;

/** What both forms of the history request (POST body, GET query) ask. */
interface HistoryOptions {
  readonly limit: number;
  readonly before?: string | null | undefined;
  readonly metadata?: Record<string, unknown> | null | undefined;
  readonly namespace?: string | null | undefined;
  readonly checkpointId?: string | null | undefined;
}

export function threadStateOperations(ctx: ServerContext): Operation[] {
  const { store, graphs, runner, checkpointer } = ctx;
  /**
   * The thread's graph on the server's checkpointer; null before its first run (or when its graph is no longer served).
   */
  const graphOf = async (thread: Thread): Promise<RunnableGraph | null> => {
    const graphId = thread.metadata.graph_id;
    if (typeof graphId !== 'string' || !graphs.has(graphId)) return null;
    // A factory builds the graph from the config of the thread's last run (its nodes may depend on it).
    const kept = (thread.config as { configurable?: Record<string, unknown> }).configurable;
    return graphs.get(graphId, { configurable: { ...kept, thread_id: thread.thread_id } });
  };
  /** The state at a checkpoint of the thread of the path; 404 if the thread or the checkpoint is unknown. */
  const stateAt = async (
    c: Context<AgentEnv>,
    checkpoint: { checkpoint_id?: string | null | undefined; checkpoint_ns?: string | null | undefined },
    subgraphs: boolean,
  ) => {
    const thread = await visibleThread(c, ctx, param(c, 'thread_id'));
    const graph = await graphOf(thread);
    const configurable = {
      ...checkpoint,
      thread_id: thread.thread_id,
      checkpoint_ns: checkpoint.checkpoint_ns ?? '',
      ...(checkpoint.checkpoint_id ? { checkpoint_id: checkpoint.checkpoint_id } : {}),
    };
    const state = graph === null ? null : await graph.getState({ configurable }, { subgraphs });
    if (state === null || state.createdAt === undefined)
      throw notFound('Checkpoint', checkpoint.checkpoint_id ?? checkpoint.checkpoint_ns ?? '');
    return c.json(stateJson(state));
  };
  const history = async (c: Context<AgentEnv>, options: HistoryOptions) => {
    const thread = await visibleThread(c, ctx, param(c, 'thread_id'));
    const graph = await graphOf(thread);
    if (graph === null) return c.json([]);
    const configurable: Record<string, unknown> = {
      thread_id: thread.thread_id,
      checkpoint_ns: options.namespace ?? '',
    };
    if (options.checkpointId) configurable.checkpoint_id = options.checkpointId;
    const states = [];
    const found = graph.getStateHistory(
      { configurable },
      {
        limit: options.limit,
        before: options.before ? { configurable: { checkpoint_id: options.before } } : undefined,
        filter: options.metadata ?? undefined,
      },
    );
    for await (const state of found) states.push(stateJson(state));
    return c.json(states);
  };

  return [
    operation({
      method: 'get',
      path: '/threads/{thread_id}/state',
      operationId: 'get_thread_state',
      summary: 'Get the state of a thread',
      tag: 'Threads',
      query: threadStateQuery,
      responses: stateAnswer,
      async handler(c, { query }) {
        const thread = await visibleThread(c, ctx, param(c, 'thread_id'));
        const graph = await graphOf(thread);
        if (graph === null) return c.json(emptyState());
        const state = await graph.getState({ configurable: { thread_id: thread.thread_id } }, query);
        return c.json(stateJson(state));
      },
    }),
    operation({
      method: 'get',
      path: '/threads/{thread_id}/state/{checkpoint_id}',
      operationId: 'get_thread_state_at_checkpoint',
      summary: 'Get the state of a thread at a checkpoint',
      tag: 'Threads',
      query: threadStateQuery,
      responses: stateAnswer,
      handler: (c, { query }) => stateAt(c, { checkpoint_id: param(c, 'checkpoint_id') }, query.subgraphs),
    }),
    operation({
      method: 'post',
      path: '/threads/{thread_id}/state/checkpoint',
      operationId: 'post_thread_state_at_checkpoint',
      summary: 'Get the state of a thread at a checkpoint (named in the body)',
      tag: 'Threads',
      body: threadStateAt,
      responses: stateAnswer,
      handler: (c, { body }) => stateAt(c, body.checkpoint, body.subgraphs),
    }),
    operation({
      method: 'post',
      path: '/threads/{thread_id}/state',
      operationId: 'update_thread_state',
      summary: 'Update the state of a thread',
      description:
        'Writes `values` as if node `as_node` had returned them (by default the node that ran last), on top of the current state or of `checkpoint_id`: a new checkpoint, and the thread record follows it. 409 while a run is queued or running on the thread, or before the thread has a graph (run it first, or create it with `metadata.graph_id`: the graphId of the JS client).',
      tag: 'Threads',
      body: threadStateUpdate,
      responses: {
        200: { description: 'The new checkpoint.', schema: z.object({ checkpoint: z.unknown() }) },
        ...errors,
        409: { description: 'A run is on the thread, or the thread has no graph yet.', schema: errorSchema },
      },
      async handler(c, { body }) {
        const threadId = param(c, 'thread_id');
        const thread = await visibleThread(c, ctx, threadId, 'update', {
          thread_id: threadId,
          values: (body.values ?? null) as Json,
          as_node: body.as_node ?? null,
        });
        if (runner.busy(threadId))
          throw conflict(
            `Thread ${threadId} is running a task: wait for it to finish (or cancel it) before updating its state.`,
          );
        const graph = await graphOf(thread);
        if (graph === null)
          throw conflict(
            `Thread ${threadId} has no graph yet: run it first, or create it with metadata.graph_id (the JS client's graphId).`,
          );
        const checkpointId = body.checkpoint_id ?? body.checkpoint?.checkpoint_id;
        // A checkpoint of a subgraph (`tasks[i].checkpoint` or `.state.checkpoint` of a state read with `subgraphs`)
        // updates that subgraph's state: its namespace (and checkpoint map) go to LangGraph as given.
        const configurable = {
          ...body.checkpoint,
          thread_id: threadId,
          checkpoint_ns: body.checkpoint?.checkpoint_ns ?? '',
          ...(checkpointId ? { checkpoint_id: checkpointId } : {}),
        };
        let written: { configurable?: Record<string, unknown> };
        try {
          written = await graph.updateState({ configurable }, body.values ?? null, body.as_node ?? undefined);
        } catch (err) {
          if ((err as Error).name !== 'InvalidUpdateError') throw err;
          throw invalid({ loc: ['body', 'as_node'], msg: (err as Error).message, type: 'value_error' });
        }
        const state = await graph.getState({ configurable: { thread_id: threadId } });
        const interrupts = interruptsOf(state);
        const current = (await store.getThread(threadId)) ?? thread;
        await store.putThread({
          ...current,
          values: toPlain<Json | null>(state.values ?? null),
          interrupts,
          status: Object.keys(interrupts).length > 0 || state.next.length > 0 ? 'interrupted' : 'idle',
          updated_at: new Date().toISOString(),
        });
        return c.json({ checkpoint: checkpointOf(written) });
      },
    }),
    operation({
      method: 'patch',
      path: '/threads/{thread_id}/state',
      operationId: 'patch_thread_state',
      summary: 'Add metadata to the current state of a thread',
      description:
        "Merges `metadata` into the metadata of the thread's latest checkpoint (`threads.patchState`); values and history stay as they are.",
      tag: 'Threads',
      body: threadStatePatch,
      responses: {
        204: { description: 'Patched.' },
        ...errors,
        409: { description: 'A run is on the thread, or it has no state yet.', schema: errorSchema },
      },
      async handler(c, { body }) {
        const threadId = param(c, 'thread_id');
        await visibleThread(c, ctx, threadId, 'update', { thread_id: threadId, metadata: body.metadata });
        if (runner.busy(threadId))
          throw conflict(
            `Thread ${threadId} is running a task: wait for it to finish (or cancel it) before patching its state.`,
          );
        const latest = await checkpointer.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: '' } });
        if (latest === undefined) throw conflict(`Thread ${threadId} has no state yet: run it first.`);
        const parentId = latest.parentConfig?.configurable?.checkpoint_id as string | undefined;
        const at = {
          configurable: { thread_id: threadId, checkpoint_ns: '', ...(parentId ? { checkpoint_id: parentId } : {}) },
        };
        await checkpointer.put(
          at,
          latest.checkpoint,
          { ...latest.metadata, ...body.metadata } as CheckpointMetadata,
          {},
        );
        return c.body(null, 204);
      },
    }),
    operation({
      ...historyOperation,
      method: 'post',
      operationId: 'get_thread_history',
      body: threadHistory,
      handler: (c, { body }) =>
        history(c, {
          ...body,
          namespace: body.checkpoint?.checkpoint_ns,
          checkpointId: body.checkpoint?.checkpoint_id,
        }),
    }),
    operation({
      ...historyOperation,
      method: 'get',
      operationId: 'get_thread_history_get',
      query: threadHistoryQuery,
      handler: (c, { query }) => history(c, query),
    }),
  ];
}

function checkpointOf(config: StateSnapshotLike['config']): CheckpointRef {
  const c = config?.configurable;
  if (typeof c?.thread_id !== 'string' || typeof c.checkpoint_id !== 'string') return null;
  return {
    thread_id: c.thread_id,
    checkpoint_ns: typeof c.checkpoint_ns === 'string' ? c.checkpoint_ns : '',
    checkpoint_id: c.checkpoint_id,
    checkpoint_map:
      typeof c.checkpoint_map === 'object' && c.checkpoint_map !== null ? toPlain(c.checkpoint_map) : null,
  };
}

const isSnapshot = (v: unknown): v is StateSnapshotLike =>
  typeof v === 'object' && v !== null && 'values' in v && 'next' in v;

/**
 * A state as the official server answers it. A subgraph task names its checkpoint (`{thread_id, checkpoint_ns}`: read
 * or update the subgraph through it) or, read with `subgraphs`, carries the subgraph's whole state.
 */
function stateJson(s: StateSnapshotLike): Record<string, unknown> {
  return {
    values: toPlain(s.values ?? {}),
    next: [...s.next],
    tasks: s.tasks.map((t) => {
      const config = t.state as { configurable?: Record<string, unknown> } | null | undefined;
      return {
        id: t.id,
        name: t.name,
        error: t.error == null ? null : errorText(t.error),
        interrupts: toPlain(t.interrupts ?? []),
        path: t.path === undefined ? null : toPlain(t.path),
        checkpoint:
          config != null && typeof config.configurable === 'object'
            ? toPlain(publicCheckpoint(config.configurable))
            : null,
        state: isSnapshot(t.state) ? stateJson(t.state) : null,
        result: t.result === undefined ? null : toPlain(t.result),
      };
    }),
    checkpoint: checkpointOf(s.config),
    parent_checkpoint: checkpointOf(s.parentConfig),
    metadata: s.metadata === undefined ? null : toPlain(s.metadata),
    created_at: s.createdAt ?? null,
  };
}

function emptyState() {
  return {
    values: {},
    next: [],
    tasks: [],
    checkpoint: null,
    parent_checkpoint: null,
    metadata: null,
    created_at: null,
  };
}

/** A task's error as text: its message (an Error), or the value itself. */
function errorText(error: unknown): string {
  if (typeof error === 'object' && error !== null && typeof (error as Error).message === 'string')
    return (error as Error).message;
  return typeof error === 'string' ? error : JSON.stringify(toPlain(error));
}

/** The checkpoint keys of a subgraph task's configurable (never LangGraph's internals or the user). */
function publicCheckpoint(configurable: Record<string, unknown>): Record<string, unknown> {
  const keep = ['thread_id', 'checkpoint_ns', 'checkpoint_id', 'checkpoint_map'];
  return Object.fromEntries(Object.entries(configurable).filter(([k]) => keep.includes(k)));
}
