import { z } from 'zod';
import { matchesFilter } from '../../auth/filters.ts';
import type { ServerContext } from '../../context.ts';
import { invalid } from '../../errors.ts';
import { isUnfinished } from '../../runs/orphans.ts';
import { cancelElsewhere } from '../../relay/cancel-elsewhere.ts';
import type { Run, Thread } from '../../store/records.ts';
import { errorSchema } from '../common-schemas.ts';
import { operation, type Operation } from '../operations.ts';

/**
 * `POST /runs/cancel` (`runs.cancelMany`): cancel runs by id (of one thread, or any), or every run of a status
 * (`pending`, `running`, `all` unfinished), optionally on one thread. Only runs on threads the `threads:update`
 * handler lets the caller change are touched; finished runs and unknown ids are skipped. As the official server
 * (its OpenAPI): 204 at once, `action=interrupt` (default) or `rollback`.
 */
const bulkCancel = z
  .object({
    thread_id: z.uuid().nullish(),
    run_ids: z.array(z.string()).max(1000).nullish(),
    status: z.enum(['pending', 'running', 'all']).nullish(),
  })
  .refine((b) => (b.run_ids?.length ?? 0) > 0 || b.status != null, {
    message: 'give run_ids or status',
    path: ['run_ids'],
  });
const bulkCancelQuery = z.object({ action: z.enum(['interrupt', 'rollback']).default('interrupt') });

export function bulkCancelOperation(ctx: ServerContext): Operation {
  const { store, runner } = ctx;
  return operation({
    method: 'post',
    path: '/runs/cancel',
    operationId: 'cancel_runs',
    summary: 'Cancel runs',
    description:
      'Cancels the given runs (`run_ids`, of `thread_id` if given), or every `pending`, `running` or unfinished (`all`) run, of `thread_id` if given. Runs the caller may not change, finished runs and unknown ids are skipped.',
    tag: 'Runs',
    body: bulkCancel,
    query: bulkCancelQuery,
    responses: {
      204: { description: 'Cancellation requested.' },
      401: { description: 'Not authenticated.', schema: errorSchema },
      422: { description: 'Neither run_ids nor status.', schema: errorSchema },
    },
    async handler(c, { body, query }) {
      if (body.run_ids?.length && body.status != null)
        throw invalid({ loc: ['body', 'status'], msg: 'give run_ids or status, not both', type: 'value_error' });
      const filter = await c.get('auth').authorize('threads', 'update', {
        thread_id: body.thread_id ?? null,
        run_ids: body.run_ids ?? null,
        status: body.status ?? null,
        action: query.action,
      });
      const candidates = body.run_ids?.length
        ? (await Promise.all(body.run_ids.map((id) => store.getRun(id)))).filter((r): r is Run => r !== null)
        : await runsOf(ctx, body.thread_id ?? null);
      const threads = new Map<string, Thread | null>();
      const visible = async (run: Run) => {
        if (!threads.has(run.thread_id)) threads.set(run.thread_id, await store.getThread(run.thread_id));
        const thread = threads.get(run.thread_id) ?? null;
        return matchesFilter(thread?.metadata ?? run.metadata, filter);
      };
      const reason = query.action === 'rollback' ? 'cancel-rollback' : 'cancel';
      for (const run of candidates) {
        if (!isUnfinished(run) || (body.thread_id != null && run.thread_id !== body.thread_id)) continue;
        if (body.status != null && body.status !== 'all' && run.status !== body.status) continue;
        if (!(await visible(run))) continue;
        const handle = runner.find(run.run_id);
        if (handle !== undefined) handle.cancel(reason);
        // A run on another server: the relay tells its server at once (the lease is the fallback).
        else await cancelElsewhere(ctx, run.run_id, query.action === 'rollback');
      }
      return c.body(null, 204);
    },
  });
}

/** The runs of one thread, or of every thread. */
async function runsOf({ store }: ServerContext, threadId: string | null): Promise<Run[]> {
  const ids = threadId !== null ? [threadId] : (await store.listThreads()).map((t) => t.thread_id);
  return (await Promise.all(ids.map((id) => store.listRuns(id)))).flat();
}
