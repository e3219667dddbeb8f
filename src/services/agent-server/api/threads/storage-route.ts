import { z } from 'zod';
import type { ServerContext } from '../../context.ts';
import { ApiError, invalid } from '../../errors.ts';
import { threadStorageReader } from '../../store/checkpoint-storage.ts';
import { errorSchema } from '../common-schemas.ts';
import { operation, param, type Operation } from '../operations.ts';
import { visibleThread } from './thread-access.ts';

const section = z.object({
  rows: z.number().int().describe('Stored rows.'),
  bytes: z.number().int().describe('Bytes they occupy, as stored.'),
});
const storageSchema = z.object({
  thread_id: z.uuid(),
  total_bytes: z.number().int().describe('Sum of the three sections.'),
  checkpoints: section.describe('Checkpoint rows: serialized checkpoint plus metadata (without the channel values).'),
  channel_values: section
    .extend({ by_channel: z.record(z.string(), section).describe('The same, per channel.') })
    .describe(
      "Stored channel values: this server keeps them inside each checkpoint's row, so one row per channel per checkpoint.",
    ),
  pending_writes: section.describe('Task writes stored with their checkpoint.'),
});
const threadPath = z.uuid();

/**
 * `GET /threads/{thread_id}/storage`: the bytes a thread's checkpoints occupy in the server's checkpointer (subgraphs
 * included), for a caller who may read the thread. 501 when the checkpointer is not one of this server's (an embedder
 * passed its own): its storage is unknown here.
 */
export function threadStorageOperation(ctx: ServerContext): Operation {
  const measure = threadStorageReader(ctx.checkpointer);
  return operation({
    method: 'get',
    path: '/threads/{thread_id}/storage',
    operationId: 'get_thread_storage',
    summary: 'Get the storage a thread occupies',
    description:
      "Bytes the thread's checkpoints occupy in the built-in checkpointer, as stored: checkpoints, channel values (per channel) and pending writes, every namespace (subgraphs) included. 501 when a custom checkpointer is configured.",
    tag: 'Threads',
    responses: {
      200: { description: "The thread's storage.", schema: storageSchema },
      401: { description: 'Not authenticated.', schema: errorSchema },
      404: { description: 'Unknown thread (or not visible to the caller).', schema: errorSchema },
      422: { description: 'The thread id is not a UUID.', schema: errorSchema },
      501: { description: 'A custom checkpointer is configured.', schema: errorSchema },
    },
    async handler(c) {
      const id = param(c, 'thread_id');
      if (!threadPath.safeParse(id).success)
        throw invalid({ loc: ['path', 'thread_id'], msg: 'thread_id must be a UUID.', type: 'uuid_parsing' });
      const thread = await visibleThread(c, ctx, id);
      if (measure === null)
        throw new ApiError(501, "Thread storage is measured only in the server's own checkpointer (memory or Redis).");
      return c.json(await measure(thread.thread_id));
    },
  });
}
