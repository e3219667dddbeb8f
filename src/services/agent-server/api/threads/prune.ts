import type { BaseCheckpointSaver, CheckpointTuple } from '@langchain/langgraph-checkpoint';
import { z } from 'zod';
import { matchesFilter } from '../../auth/filters.ts';
import type { ServerContext } from '../../context.ts';
import { errorSchema } from '../common-schemas.ts';
import { operation, type Operation } from '../operations.ts';
import { removeThread } from './removal.ts';

/**
 * `POST /threads/prune` (`threads.prune`), as the official server's OpenAPI has it: `delete` removes the threads
 * entirely (as DELETE /threads/{id}); `keep_latest` keeps each thread and its latest state but drops its older
 * checkpoints (its history), skipping a thread with a run on it. Threads the `threads:delete` handler hides, and
 * unknown ids, are not counted. Answers `{pruned_count}`.
 */
const pruneBody = z.object({
  thread_ids: z.array(z.uuid()).min(1).max(1000),
  strategy: z.enum(['delete', 'keep_latest']).default('delete'),
});

export function threadPruneOperation(ctx: ServerContext): Operation {
  const { store, runner, checkpointer } = ctx;
  return operation({
    method: 'post',
    path: '/threads/prune',
    operationId: 'prune_threads',
    summary: 'Prune threads',
    description:
      '`delete`: the threads go, with their runs and state. `keep_latest`: each keeps its latest state; older checkpoints go (a thread with a run on it is skipped).',
    tag: 'Threads',
    body: pruneBody,
    responses: {
      200: { description: 'How many threads were pruned.', schema: z.object({ pruned_count: z.number().int() }) },
      401: { description: 'Not authenticated.', schema: errorSchema },
      422: { description: 'Invalid request.', schema: errorSchema },
    },
    async handler(c, { body }) {
      const filter = await c.get('auth').authorize('threads', 'delete', {
        thread_ids: body.thread_ids,
        strategy: body.strategy,
      });
      let pruned = 0;
      for (const id of new Set(body.thread_ids)) {
        const thread = await store.getThread(id);
        if (thread === null || !matchesFilter(thread.metadata, filter)) continue;
        if (body.strategy === 'delete') await removeThread(ctx, id);
        else if (runner.busy(id)) continue;
        else await keepLatest(checkpointer, id);
        pruned += 1;
      }
      return c.json({ pruned_count: pruned });
    },
  });
}

/** Drops every checkpoint of the thread but the latest of each namespace (kept with its pending writes). */
async function keepLatest(saver: BaseCheckpointSaver, threadId: string): Promise<void> {
  const latest = new Map<string, CheckpointTuple>();
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) {
    const ns = (tuple.config.configurable?.checkpoint_ns as string | undefined) ?? '';
    if (!latest.has(ns)) latest.set(ns, tuple);
  }
  if (typeof saver.deleteThread !== 'function') return;
  await saver.deleteThread(threadId);
  for (const [ns, { checkpoint, metadata, pendingWrites }] of latest) {
    const written = await saver.put(
      { configurable: { thread_id: threadId, checkpoint_ns: ns } },
      checkpoint,
      metadata ?? { source: 'update', step: -1, parents: {} },
      // Every channel as new: a checkpointer that keeps values apart (PostgresSaver) writes them only then.
      checkpoint.channel_versions,
    );
    const byTask = new Map<string, [string, unknown][]>();
    for (const [taskId, channel, value] of pendingWrites ?? [])
      byTask.set(taskId, [...(byTask.get(taskId) ?? []), [channel, value]]);
    for (const [taskId, writes] of byTask) await saver.putWrites(written, writes, taskId);
  }
}
