import type { Context } from 'hono';
import { z } from 'zod';
import { findAssistant } from '../assistants/lookup.ts';
import type { AgentEnv } from '../../auth/authenticate.ts';
import { matchesFilter } from '../../auth/filters.ts';
import type { ServerContext } from '../../context.ts';
import { notFound } from '../../errors.ts';
import { newId } from '../ids.ts';
import { pageAnswer } from '../listing.ts';
import { operation, param, type Operation } from '../operations.ts';
import { nextRunDate } from '../../runs/cron-expressions.ts';
import { errorSchema } from '../common-schemas.ts';
import { cronCount, cronCreate, cronPatch, cronSchema, cronSearch, type CronCreate } from './schemas.ts';
import { checkWebhook } from '../runs/webhook-check.ts';
import { visibleThread } from '../threads/thread-access.ts';
import type { Cron, Json } from '../../store/records.ts';
import { quotaOwner } from '../../quotas.ts';
import { checkCronInterval, CronQuota } from './cron-quota.ts';

/**
 * Crons (`client.crons`): a run body started on a schedule (cron format,
 * UTC), on a thread or threadless (a new thread per run), as the user who
 * created the cron. runs/cron-scheduler.ts starts the runs. The `crons`
 * authorization handlers see each cron (`create`: `{cron_id, thread_id,
 * user_id, schedule, end_time, payload}`, whose `payload.metadata` becomes
 * the cron's metadata, e.g. an owner) and their filters apply to its
 * metadata: a cron they exclude answers 404 and is left out of searches. A cron on a thread needs
 * `threads:create_run` on it, and goes when the thread is deleted.
 */
const errors = {
  401: { description: 'Not authenticated.', schema: errorSchema },
  404: { description: 'Unknown cron, assistant or thread (or not visible to the caller).', schema: errorSchema },
  422: {
    description: 'Invalid request (e.g. a schedule that is not cron format, or runs more often than the minimum).',
    schema: errorSchema,
  },
};
const common = { tag: 'Crons' } as const;

/** A cron as the API answers it: everything but whom its runs run as. */
export function cronJson({ run_as: _runAs, ...cron }: Cron): Omit<Cron, 'run_as'> {
  return { ...cron, timezone: cron.timezone ?? null };
}

export function cronOperations(ctx: ServerContext): Operation[] {
  const { store, graphs, quotas } = ctx;
  const quota = new CronQuota(store, quotas);
  /** The cron of the path, if the `crons:<action>` handler's filter lets the caller see it; 404 otherwise. */
  const visibleCron = async (
    c: Context<AgentEnv>,
    action: 'read' | 'update' | 'delete',
    value: Json,
  ): Promise<Cron> => {
    const id = param(c, 'cron_id');
    const filter = await c.get('auth').authorize('crons', action, { cron_id: id, ...value });
    const cron = await store.getCron(id);
    if (cron === null || !matchesFilter(cron.metadata, filter)) throw notFound('Cron', id);
    return cron;
  };
  const matching = async (
    c: Context<AgentEnv>,
    body: z.output<typeof cronCount> & { enabled?: boolean | null | undefined },
  ) => {
    const filter = await c
      .get('auth')
      .authorize('crons', 'search', { assistant_id: body.assistant_id ?? null, thread_id: body.thread_id ?? null });
    return (await store.listCrons()).filter(
      (cron) =>
        (body.assistant_id == null || cron.assistant_id === body.assistant_id) &&
        (body.thread_id == null || cron.thread_id === body.thread_id) &&
        (body.enabled == null || cron.enabled === body.enabled) &&
        matchesFilter(cron.metadata, filter),
    );
  };
  const create =
    (threaded: boolean) =>
    async (c: Context<AgentEnv>, { body }: { body: CronCreate }) => {
      const auth = c.get('auth');
      const threadId = threaded ? param(c, 'thread_id') : null;
      const assistant = await findAssistant(store, graphs, body.assistant_id);
      if (assistant === null) throw notFound('Assistant', body.assistant_id);
      if (threadId !== null)
        await visibleThread(c, ctx, threadId, 'create_run', {
          thread_id: threadId,
          assistant_id: assistant.assistant_id,
        });
      const { schedule, end_time, enabled, on_run_completed, timezone, ...runBody } = body;
      checkCronInterval(schedule, quotas);
      await checkWebhook(ctx, body.webhook);
      // The public shape of `crons:create`: a handler may change the payload, e.g. write an owner into its metadata.
      const value: Json = {
        cron_id: newId(),
        thread_id: threadId,
        user_id: auth.user.identity,
        schedule,
        end_time: end_time ?? null,
        payload: { ...runBody, metadata: { ...runBody.metadata } },
      };
      await auth.authorize('crons', 'create', value);
      const payload = (value.payload ?? {}) as Json;
      const metadata = (payload.metadata ?? {}) as Json;
      const now = new Date();
      const cron: Cron = {
        cron_id: String(value.cron_id),
        assistant_id: assistant.assistant_id,
        thread_id: threadId,
        user_id: auth.user.identity,
        schedule,
        payload: { ...payload, metadata },
        next_run_date: nextRunDate(schedule, end_time ?? null, now, timezone ?? null),
        end_time: end_time ?? null,
        timezone: timezone ?? null,
        metadata,
        enabled: enabled ?? true,
        on_run_completed: on_run_completed ?? 'delete',
        created_at: now.toISOString(),
        updated_at: now.toISOString(),
        run_as: {
          identity: auth.user.identity,
          display_name: auth.user.display_name,
          permissions: [...auth.user.permissions],
        },
      };
      await quota.within(quotaOwner(auth.user), () => store.putCron(cron));
      return c.json(cronJson(cron));
    };
  const createAnswer = {
    200: { description: 'The cron.', schema: cronSchema },
    409: { description: 'Quota exceeded: MAX_CRONS, or MAX_CRONS_PER_USER for the caller.', schema: errorSchema },
    ...errors,
  };

  return [
    operation({
      ...common,
      method: 'post',
      path: '/runs/crons',
      operationId: 'create_cron',
      summary: 'Schedule threadless runs',
      body: cronCreate,
      responses: createAnswer,
      handler: create(false),
    }),
    operation({
      ...common,
      method: 'post',
      path: '/threads/{thread_id}/runs/crons',
      operationId: 'create_thread_cron',
      summary: 'Schedule runs on a thread',
      body: cronCreate,
      responses: createAnswer,
      handler: create(true),
    }),
    operation({
      ...common,
      method: 'post',
      path: '/runs/crons/search',
      operationId: 'search_crons',
      summary: 'Search crons',
      body: cronSearch,
      responses: {
        200: {
          description: 'Matching crons.',
          schema: z.array(cronSchema),
          headers: { 'X-Pagination-Total': 'Number of matches.' },
        },
        ...errors,
      },
      handler: async (c, { body }) =>
        pageAnswer(c, (await matching(c, body)).map(cronJson), body, { sortBy: 'created_at', tieBreak: 'cron_id' }),
    }),
    operation({
      ...common,
      method: 'post',
      path: '/runs/crons/count',
      operationId: 'count_crons',
      summary: 'Count crons',
      body: cronCount,
      responses: { 200: { description: 'The number of matching crons.', schema: z.number().int() }, ...errors },
      handler: async (c, { body }) => c.json((await matching(c, body)).length),
    }),
    operation({
      ...common,
      method: 'get',
      path: '/runs/crons/{cron_id}',
      operationId: 'get_cron',
      summary: 'Get a cron',
      responses: { 200: { description: 'The cron.', schema: cronSchema }, ...errors },
      handler: async (c) => c.json(cronJson(await visibleCron(c, 'read', {}))),
    }),
    operation({
      ...common,
      method: 'patch',
      path: '/runs/crons/{cron_id}',
      operationId: 'update_cron',
      summary: 'Update a cron',
      description:
        'Changes the schedule, its `timezone`, end, run body fields or `enabled`; the next run date follows.',
      body: cronPatch,
      responses: { 200: { description: 'The cron.', schema: cronSchema }, ...errors },
      async handler(c, { body }) {
        if (body.schedule !== undefined) checkCronInterval(body.schedule, quotas);
        await checkWebhook(ctx, body.webhook);
        const cron = await visibleCron(c, 'update', { ...body });
        const { schedule, end_time, enabled, on_run_completed, metadata, timezone, ...runFields } = body;
        const changedRun = Object.fromEntries(Object.entries(runFields).filter(([, v]) => v !== undefined));
        const next = {
          schedule: schedule ?? cron.schedule,
          end_time: end_time === undefined ? cron.end_time : end_time,
          timezone: timezone === undefined ? (cron.timezone ?? null) : timezone,
          metadata: metadata == null ? cron.metadata : { ...cron.metadata, ...metadata },
        };
        const updated: Cron = {
          ...cron,
          ...next,
          payload: { ...cron.payload, ...changedRun, metadata: next.metadata },
          enabled: enabled ?? cron.enabled,
          on_run_completed: on_run_completed ?? cron.on_run_completed,
          next_run_date: nextRunDate(next.schedule, next.end_time, new Date(), next.timezone),
          updated_at: new Date().toISOString(),
        };
        await store.putCron(updated);
        return c.json(cronJson(updated));
      },
    }),
    operation({
      ...common,
      method: 'delete',
      path: '/runs/crons/{cron_id}',
      operationId: 'delete_cron',
      summary: 'Delete a cron',
      description: 'No run starts from it afterwards; runs already started go on.',
      responses: { 204: { description: 'Deleted.' }, ...errors },
      async handler(c) {
        const cron = await visibleCron(c, 'delete', {});
        await store.deleteCron(cron.cron_id);
        return c.body(null, 204);
      },
    }),
  ];
}
