import { z } from 'zod';
import { RUN_STATUSES, THREAD_STATUSES } from '../../store/records.ts';
import { object, page, sortOrder, timestamp } from '../common-schemas.ts';
import { supersteps } from './supersteps.ts';

export const THREAD_FIELDS = [
  'thread_id',
  'created_at',
  'updated_at',
  'state_updated_at',
  'metadata',
  'status',
  'values',
  'config',
  'interrupts',
] as const;

/** `{strategy: "delete", ttl: <minutes>}` (fractions allowed), as the official schema. */
const threadTtlRequest = z
  .object({
    strategy: z.literal('delete').default('delete'),
    ttl: z.number().positive(),
  })
  .nullish()
  .describe('Delete the thread (with its runs and state) this many minutes from now.');

export const threadCreate = z.object({
  thread_id: z.uuid().nullish().describe('Default: a new UUID.'),
  metadata: object().nullish(),
  if_exists: z.enum(['raise', 'do_nothing']).nullish(),
  ttl: threadTtlRequest,
  supersteps: supersteps
    .nullish()
    .describe('Updates applied to the new thread, superstep after superstep; needs metadata.graph_id.'),
});

export const threadPatch = z.object({
  metadata: object().nullish().describe('Merged into the metadata.'),
  ttl: threadTtlRequest,
});

export const threadSearch = z.object({
  metadata: object().nullish().describe('Exact match on each key.'),
  ids: z.array(z.string()).nullish(),
  status: z.enum(THREAD_STATUSES).nullish(),
  values: object().nullish().describe('Exact match on each top-level key of the thread values.'),
  ...page,
  sort_by: z
    .enum(['thread_id', 'status', 'created_at', 'updated_at', 'state_updated_at'])
    .nullish()
    .describe('Default: created_at.'),
  sort_order: sortOrder,
  select: z.array(z.enum(THREAD_FIELDS)).nullish(),
});

export const threadCount = threadSearch.pick({ metadata: true, values: true, status: true });

export const threadList = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(10),
  offset: z.coerce.number().int().min(0).default(0),
});

export const threadGet = z.object({
  include: z
    .string()
    .optional()
    .describe("`ttl`: the thread's TTL (`strategy`, `ttl_minutes`, `expires_at`), if it has one."),
});

export const runList = threadList.extend({ status: z.enum(RUN_STATUSES).optional() });

export const threadSchema = z.object({
  thread_id: z.uuid(),
  created_at: timestamp,
  updated_at: timestamp,
  state_updated_at: timestamp.describe('When its state last changed (its creation time before any state).'),
  metadata: object(),
  status: z.enum(THREAD_STATUSES),
  values: object().nullable(),
  config: object(),
  interrupts: z.record(z.string(), z.array(z.unknown())),
  ttl: z
    .object({ strategy: z.literal('delete'), ttl_minutes: z.number(), expires_at: timestamp })
    .optional()
    .describe('Only with `include=ttl`, on a thread that has one.'),
});
