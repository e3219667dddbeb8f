import type { Context } from 'hono';
import { z } from 'zod';
import type { AgentEnv } from '../../auth/authenticate.ts';
import { matchesFilter } from '../../auth/filters.ts';
import type { ServerContext } from '../../context.ts';
import { ApiError, conflict } from '../../errors.ts';
import { matchesExactly, pageAnswer } from '../listing.ts';
import { operation, param, type Operation } from '../operations.ts';
import { settleIfOrphaned } from '../../runs/orphans.ts';
import { errorSchema } from '../common-schemas.ts';
import { runSchema } from '../runs/schemas.ts';
import {
  runList,
  threadCount,
  threadCreate,
  threadGet,
  threadList,
  threadPatch,
  threadSchema,
  threadSearch,
} from './schemas.ts';
import { copyCheckpoints } from '../../store/checkpoint-copy.ts';
import { removeThread } from './removal.ts';
import { createThread, threadJson, threadTtl, visibleThread } from './thread-access.ts';
import { applySupersteps, requireSuperstepGraph } from './supersteps.ts';
import type { Json, Thread } from '../../store/records.ts';

/**
 * Threads: a conversation whose state the checkpointer keeps between runs.
 * Reads go through the `threads` authorization handlers: a thread their
 * filter excludes answers 404 and is left out of searches, so with an
 * owner filter `GET /threads` lists only the caller's threads.
 */
const errors = {
  401: { description: 'Not authenticated.', schema: errorSchema },
  422: { description: 'Invalid request.', schema: errorSchema },
};
const notFoundAnswer = { 404: { description: 'Unknown thread (or not visible to the caller).', schema: errorSchema } };

export function threadOperations(ctx: ServerContext): Operation[] {
  const { store } = ctx;
  /** Threads matching `body` that the `threads:search` handler lets the caller see. */
  const matching = async (
    c: Context<AgentEnv>,
    body: z.output<typeof threadCount> & { ids?: string[] | null | undefined },
    paging: Json = {},
  ) => {
    const value: Json = {
      metadata: body.metadata ?? {},
      values: body.values ?? {},
      status: body.status ?? null,
      ...paging,
    };
    const filter = await c.get('auth').authorize('threads', 'search', value);
    const ids = body.ids ? new Set(body.ids) : null;
    return (await store.listThreads()).filter(
      (t) =>
        (ids === null || ids.has(t.thread_id)) &&
        (body.status == null || t.status === body.status) &&
        matchesExactly(t.metadata, body.metadata) &&
        matchesExactly(t.values, body.values) &&
        matchesFilter(t.metadata, filter),
    );
  };
  const search = async (c: Context<AgentEnv>, body: z.output<typeof threadSearch>) =>
    pageAnswer(
      c,
      (await matching(c, body, { limit: body.limit, offset: body.offset })).map((t) => threadJson(t)),
      body,
      {
        sortBy: 'created_at',
        tieBreak: 'thread_id',
      },
    );
  const list = {
    200: {
      description: 'Matching threads.',
      schema: z.array(threadSchema),
      headers: { 'X-Pagination-Total': 'Number of matches.' },
    },
    ...errors,
  };

  return [
    operation({
      method: 'post',
      path: '/threads',
      operationId: 'create_thread',
      summary: 'Create a thread',
      tag: 'Threads',
      body: threadCreate,
      responses: {
        200: { description: 'The thread.', schema: threadSchema },
        ...errors,
        409: { description: 'The thread id exists.', schema: errorSchema },
      },
      async handler(c, { body }) {
        if (!body.supersteps?.length) return c.json(threadJson(await createThread(c.get('auth'), ctx, body)));
        const graphId = requireSuperstepGraph(ctx, body.metadata);
        const existing = body.thread_id ? await store.getThread(body.thread_id) : null;
        const thread = await createThread(c.get('auth'), ctx, body);
        // An existing thread (if_exists: do_nothing) is answered as it is.
        return c.json(
          threadJson(existing !== null ? thread : await applySupersteps(ctx, thread, graphId, body.supersteps)),
        );
      },
    }),
    operation({
      method: 'get',
      path: '/threads',
      operationId: 'list_threads',
      summary: "List the caller's threads",
      description:
        'Newest first. With a custom auth handler that filters by owner, only threads of the authenticated user.',
      tag: 'Threads',
      query: threadList,
      responses: list,
      handler: (c, { query }) => search(c, threadSearch.parse({ limit: query.limit, offset: query.offset })),
    }),
    operation({
      method: 'post',
      path: '/threads/search',
      operationId: 'search_threads',
      summary: 'Search threads',
      tag: 'Threads',
      body: threadSearch,
      responses: list,
      handler: (c, { body }) => search(c, body),
    }),
    operation({
      method: 'post',
      path: '/threads/count',
      operationId: 'count_threads',
      summary: 'Count threads',
      description: 'How many threads a search with the same filters would find (`threads.count`).',
      tag: 'Threads',
      body: threadCount,
      responses: { 200: { description: 'The number of matching threads.', schema: z.number().int() }, ...errors },
      handler: async (c, { body }) => c.json((await matching(c, body)).length),
    }),
    operation({
      method: 'get',
      path: '/threads/{thread_id}',
      operationId: 'get_thread',
      summary: 'Get a thread',
      tag: 'Threads',
      query: threadGet,
      responses: { 200: { description: 'The thread.', schema: threadSchema }, ...errors, ...notFoundAnswer },
      handler: async (c) => {
        // `include` may come repeated (the JS client) or comma-separated.
        const include = (c.req.queries('include') ?? []).flatMap((v) => v.split(','));
        return c.json(threadJson(await visibleThread(c, ctx, param(c, 'thread_id')), include.includes('ttl')));
      },
    }),
    operation({
      method: 'patch',
      path: '/threads/{thread_id}',
      operationId: 'patch_thread',
      summary: 'Update a thread',
      description: "Merges `metadata` into the thread's metadata (after the `threads:update` handler saw it).",
      tag: 'Threads',
      body: threadPatch,
      headers: { Prefer: '`return=minimal`: answer 204 without the thread.' },
      responses: {
        200: { description: 'The updated thread.', schema: threadSchema },
        204: { description: 'Updated (Prefer: return=minimal).' },
        ...errors,
        ...notFoundAnswer,
      },
      async handler(c, { body }) {
        const id = param(c, 'thread_id');
        const value: Json = { thread_id: id, metadata: { ...body.metadata } };
        const thread = await visibleThread(c, ctx, id, 'update', value);
        const updated: Thread = {
          ...thread,
          metadata: { ...thread.metadata, ...(value.metadata as Json | undefined) },
          updated_at: new Date().toISOString(),
          // A new ttl starts again from now; none keeps the thread's.
          ...(body.ttl ? { ttl: threadTtl(body.ttl) } : {}),
        };
        await store.putThread(updated);
        // `Prefer: return=minimal` (the client's returnMinimal): 204 without a body, as the official server.
        if (/(^|[,;\s])return=minimal\b/i.test(c.req.header('prefer') ?? '')) return c.body(null, 204);
        return c.json(threadJson(updated));
      },
    }),
    operation({
      method: 'delete',
      path: '/threads/{thread_id}',
      operationId: 'delete_thread',
      summary: 'Delete a thread',
      description: 'Cancels its runs, then removes it, its runs and its state.',
      tag: 'Threads',
      responses: { 204: { description: 'Deleted.' }, ...errors, ...notFoundAnswer },
      async handler(c) {
        const thread = await visibleThread(c, ctx, param(c, 'thread_id'), 'delete');
        await removeThread(ctx, thread.thread_id);
        return c.body(null, 204);
      },
    }),
    operation({
      method: 'post',
      path: '/threads/{thread_id}/copy',
      operationId: 'copy_thread',
      summary: 'Copy a thread',
      description:
        'A new thread with the same metadata (as the `threads:create` handler leaves it), values and every checkpoint, so the same history (`threads.copy`); runs are not copied.',
      tag: 'Threads',
      responses: {
        200: { description: 'The new thread.', schema: threadSchema },
        ...errors,
        409: {
          description: 'Unknown thread (or not visible to the caller), as the official server answers.',
          schema: errorSchema,
        },
      },
      async handler(c) {
        // A thread the caller cannot see (or that is not there) answers 409, as the official server does.
        const source = await visibleThread(c, ctx, param(c, 'thread_id')).catch((err: unknown) => {
          throw err instanceof ApiError && err.status === 404 ? conflict((err as Error).message) : err;
        });
        const made = await createThread(c.get('auth'), ctx, { metadata: source.metadata });
        await copyCheckpoints(ctx.checkpointer, source.thread_id, made.thread_id);
        const copy: Thread = {
          ...made,
          config: source.config,
          values: source.values,
          interrupts: source.interrupts,
          status: source.status === 'busy' ? 'idle' : source.status,
        };
        await store.putThread(copy);
        return c.json(threadJson(copy));
      },
    }),
    operation({
      method: 'get',
      path: '/threads/{thread_id}/runs',
      operationId: 'list_runs',
      summary: 'List the runs of a thread',
      tag: 'Runs',
      query: runList,
      responses: {
        200: { description: 'Runs, newest first.', schema: z.array(runSchema) },
        ...errors,
        ...notFoundAnswer,
      },
      async handler(c, { query }) {
        const thread = await visibleThread(c, ctx, param(c, 'thread_id'));
        const all = await Promise.all(
          (await store.listRuns(thread.thread_id)).map((run) => settleIfOrphaned(ctx, run)),
        );
        const runs = all.filter((r) => query.status === undefined || r.status === query.status);
        return pageAnswer(
          c,
          runs,
          { limit: query.limit, offset: query.offset },
          { sortBy: 'created_at', tieBreak: 'run_id' },
        );
      },
    }),
  ];
}
