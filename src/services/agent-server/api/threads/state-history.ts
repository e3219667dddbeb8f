import type { Context } from 'hono';
import type { AgentEnv } from '../../auth/authenticate.ts';
import type { ServerContext } from '../../context.ts';
import { operation, param, type Operation } from '../operations.ts';
import { stateJson, statesAnswer } from './state-answers.ts';
import { threadHistory, threadHistoryQuery } from './state-schemas.ts';
import { graphOf } from './thread-graph.ts';
import { visibleThread } from './thread-access.ts';

const historyOperation = {
  path: '/threads/{thread_id}/history',
  summary: 'Get the past states of a thread',
  description:
    "The states the thread went through, one per checkpoint, newest first (the first is the current state): what the JS client's `threads.getHistory` and its React `useStream` load. An empty list before the first run.",
  tag: 'Threads',
  responses: statesAnswer,
} as const;

/** What both forms of the history request (POST body, GET query) ask. */
interface HistoryOptions {
  readonly limit: number;
  readonly before?: string | null | undefined;
  readonly metadata?: Record<string, unknown> | null | undefined;
  readonly namespace?: string | null | undefined;
  readonly checkpointId?: string | null | undefined;
}

/** A thread's history: one state per checkpoint, newest first (POST with a body, GET with a query). */
export function stateHistoryOperations(ctx: ServerContext): Operation[] {
  const history = async (c: Context<AgentEnv>, options: HistoryOptions) => {
    const thread = await visibleThread(c, ctx, param(c, 'thread_id'));
    const graph = await graphOf(ctx, thread);
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
