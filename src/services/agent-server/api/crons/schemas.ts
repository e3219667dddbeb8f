import { z } from 'zod';
import { scheduleError, timezoneError } from '../../runs/cron-expressions.ts';
import { object, page, sortOrder, timestamp } from '../common-schemas.ts';
import { runCreate } from '../runs/schemas.ts';

const schedule = z
  .string()
  .superRefine((text, ctx) => {
    const error = scheduleError(text);
    if (error !== null) ctx.addIssue({ code: 'custom', message: `not a cron schedule: ${error}` });
  })
  .describe(
    'Cron format, in `timezone` (default UTC): five fields (minute hour day month weekday), or six with seconds first.',
  );
const cronFields = {
  timezone: z
    .string()
    .superRefine((text, ctx) => {
      const error = timezoneError(text);
      if (error !== null) ctx.addIssue({ code: 'custom', message: error });
    })
    .nullish()
    .describe('The IANA timezone the schedule is read in (e.g. Europe/Paris). Default: UTC.'),
  end_time: z.iso.datetime({ offset: true }).nullish().describe('No run after this time.'),
  enabled: z.boolean().nullish().describe('Default: true. A disabled cron keeps its schedule but starts no run.'),
  on_run_completed: z
    .enum(['delete', 'keep'])
    .nullish()
    .describe("Threadless: what becomes of each run's thread. Default: delete."),
};

export const cronCreate = runCreate.extend({ schedule, ...cronFields });
export type CronCreate = z.output<typeof cronCreate>;

export const cronPatch = z.object({
  schedule: schedule.optional(),
  ...cronFields,
  input: runCreate.shape.input,
  metadata: object().nullish(),
  config: runCreate.shape.config,
  context: object().nullish(),
  interrupt_before: runCreate.shape.interrupt_before,
  interrupt_after: runCreate.shape.interrupt_after,
  webhook: runCreate.shape.webhook,
});

export const cronSearch = z.object({
  assistant_id: z.string().nullish(),
  thread_id: z.string().nullish(),
  enabled: z.boolean().nullish(),
  ...page,
  sort_by: z
    .enum(['cron_id', 'assistant_id', 'thread_id', 'created_at', 'updated_at', 'next_run_date'])
    .nullish()
    .describe('Default: created_at.'),
  sort_order: sortOrder,
  select: z
    .array(
      z.enum([
        'cron_id',
        'assistant_id',
        'thread_id',
        'end_time',
        'timezone',
        'schedule',
        'created_at',
        'updated_at',
        'user_id',
        'payload',
        'next_run_date',
        'metadata',
        'enabled',
        'on_run_completed',
      ]),
    )
    .nullish(),
});

export const cronCount = cronSearch.pick({ assistant_id: true, thread_id: true });

export const cronSchema = z.object({
  cron_id: z.uuid(),
  assistant_id: z.uuid(),
  thread_id: z.uuid().nullable(),
  user_id: z.string().nullable(),
  schedule: z.string(),
  payload: object(),
  next_run_date: timestamp.nullable(),
  end_time: z.string().nullable(),
  timezone: z.string().nullable(),
  metadata: object(),
  enabled: z.boolean(),
  on_run_completed: z.enum(['delete', 'keep']),
  created_at: timestamp,
  updated_at: timestamp,
});
