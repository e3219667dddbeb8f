import type { CheckpointMetadata } from '@langchain/langgraph-checkpoint';
import { z } from 'zod';
import { errorSchema } from '../common-schemas.ts';
import type { ServerContext } from '../../context.ts';
import { conflict, invalid } from '../../errors.ts';
import { interruptsOf } from '../../graphs.ts';
import { operation, param, type Operation } from '../operations.ts';
import { toPlain } from '../../serialize.ts';
import type { Json } from '../../store/records.ts';
import { checkpointOf, stateErrors } from './state-answers.ts';
import { threadStatePatch, threadStateUpdate } from './state-schemas.ts';
import { graphOf } from './thread-graph.ts';
import { visibleThread } from './thread-access.ts';

/**
 * Changing a thread's state by hand: an update written as if a node had returned it (`threads.updateState`, e.g. a
 * human editing what an agent is about to do), and metadata added to the latest checkpoint (`threads.patchState`).
 * Both answer 409 while a run is queued or running on the thread.
 */
export function stateUpdateOperations(ctx: ServerContext): Operation[] {
  const { store, runner, checkpointer } = ctx;
  return [
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
        ...stateErrors,
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
        const graph = await graphOf(ctx, thread);
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
          state_updated_at: new Date().toISOString(),
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
        ...stateErrors,
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
  ];
}
