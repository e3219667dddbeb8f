import type { Context } from 'hono';
import type { AgentEnv } from '../../auth/authenticate.ts';
import type { ServerContext } from '../../context.ts';
import { notFound } from '../../errors.ts';
import { operation, param, type Operation } from '../operations.ts';
import { emptyState, stateAnswer, stateJson } from './state-answers.ts';
import { threadStateAt, threadStateQuery } from './state-schemas.ts';
import { graphOf } from './thread-graph.ts';
import { visibleThread } from './thread-access.ts';

/** Reading a thread's state: the current one, or the state at a checkpoint (named in the path or the body). */
export function stateReadOperations(ctx: ServerContext): Operation[] {
  /** The state at a checkpoint of the thread of the path; 404 if the thread or the checkpoint is unknown. */
  const stateAt = async (
    c: Context<AgentEnv>,
    checkpoint: { checkpoint_id?: string | null | undefined; checkpoint_ns?: string | null | undefined },
    subgraphs: boolean,
  ) => {
    const thread = await visibleThread(c, ctx, param(c, 'thread_id'));
    const graph = await graphOf(ctx, thread);
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
        const graph = await graphOf(ctx, thread);
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
  ];
}
