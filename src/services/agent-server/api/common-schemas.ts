import { z } from 'zod';
import { scheduleError } from '../runs/cron-expressions.ts';
import { MULTITASK_STRATEGIES, RUN_STATUSES, THREAD_STATUSES } from '../store/records.ts';

/**
 * The request and response schemas of the Agent Server. Routes validate
 * with these, and the OpenAPI document behind /docs is generated from the
 * same objects, so the reference cannot drift from what the server checks.
 * Optional fields accept null as "absent" (the Python client sends nulls).
 * Unknown fields are ignored, as the public server does.
 */
const object = () => z.record(z.string(), z.unknown());
const page = {
  limit: z.number().int().min(1).max(1000).default(10).describe('Most items to return.'),
  offset: z.number().int().min(0).default(0).describe('Items to skip.'),
};
const sortOrder = z.enum(['asc', 'desc']).nullish().describe('Default: desc.');

export const STREAM_MODES = ['values', 'updates', 'messages', 'messages-tuple', 'custom'] as const;
export type StreamMode = (typeof STREAM_MODES)[number];
const streamMode = z.enum(STREAM_MODES);
/** What a thread's stream carries (thread-streams.ts). */
export const THREAD_STREAM_MODES = ['run_modes', 'lifecycle', 'state_update'] as const;
export type ThreadStreamMode = (typeof THREAD_STREAM_MODES)[number];

export const ASSISTANT_FIELDS = [
  'assistant_id',
  'graph_id',
  'config',
  'context',
  'metadata',
  'name',
  'description',
  'version',
  'created_at',
  'updated_at',
] as const;
export const THREAD_FIELDS = [
  'thread_id',
  'created_at',
  'updated_at',
  'metadata',
  'status',
  'values',
  'config',
  'interrupts',
] as const;

// ---- requests

export const assistantCreate = z.object({
  graph_id: z.string().min(1).describe('A graph of the app config.'),
  assistant_id: z.uuid().nullish().describe('Default: a new UUID.'),
  config: object().nullish(),
  context: object().nullish(),
  metadata: object().nullish(),
  if_exists: z
    .enum(['raise', 'do_nothing'])
    .nullish()
    .describe('When the id exists: 409 (raise, default) or return it (do_nothing).'),
  name: z.string().nullish(),
  description: z.string().nullish(),
});

export const assistantPatch = z.object({
  graph_id: z.string().min(1).nullish().describe('Move the assistant to another graph of the app.'),
  config: object().nullish().describe('Replaces the config.'),
  context: object().nullish().describe('Replaces the context.'),
  metadata: object().nullish().describe('Merged into the metadata.'),
  name: z.string().nullish(),
  description: z.string().nullish(),
});

/** A query flag as the clients send it: `true`/`false`, `1`/`0` (and the other spellings of z.stringbool). */
const flag = () => z.stringbool();

export const assistantDelete = z.object({
  delete_threads: flag()
    .default(false)
    .describe('Also delete the threads whose metadata.assistant_id is this assistant.'),
});

export const assistantSearch = z.object({
  metadata: object().nullish().describe('Exact match on each key.'),
  graph_id: z.string().nullish(),
  name: z.string().nullish().describe('Case-insensitive substring of the name.'),
  ...page,
  sort_by: z
    .enum(['assistant_id', 'graph_id', 'name', 'created_at', 'updated_at'])
    .nullish()
    .describe('Default: created_at.'),
  sort_order: sortOrder,
  select: z.array(z.enum(ASSISTANT_FIELDS)).nullish().describe('Fields to return; default all.'),
});

export const assistantGraphQuery = z.object({
  xray: z
    .string()
    .regex(/^(true|false|\d{1,3})$/, 'xray is true, false or a depth (a whole number)')
    .transform((text) => (text === 'true' ? true : text === 'false' ? false : Number(text)))
    .optional()
    .describe('Expand subgraphs: true, or how many levels deep.'),
});

export const assistantVersions = z.object({
  metadata: object().nullish().describe('Exact match on each key.'),
  limit: z.number().int().min(1).max(1000).default(10),
  offset: z.number().int().min(0).default(0),
});

export const assistantSetLatest = z.object({ version: z.number().int().min(1) });

export const assistantCount = assistantSearch.pick({ metadata: true, graph_id: true, name: true });

export const threadCreate = z.object({
  thread_id: z.uuid().nullish().describe('Default: a new UUID.'),
  metadata: object().nullish(),
  if_exists: z.enum(['raise', 'do_nothing']).nullish(),
  ttl: z.unknown().optional().describe('Accepted; threads are not expired by this server.'),
  supersteps: z.array(z.unknown()).max(0, 'supersteps are not supported by this server').nullish(),
});

export const threadPatch = z.object({
  metadata: object().nullish().describe('Merged into the metadata.'),
  ttl: z.unknown().optional().describe('Accepted; threads are not expired by this server.'),
});

export const threadSearch = z.object({
  metadata: object().nullish().describe('Exact match on each key.'),
  ids: z.array(z.string()).nullish(),
  status: z.enum(THREAD_STATUSES).nullish(),
  values: object().nullish().describe('Exact match on each top-level key of the thread values.'),
  ...page,
  sort_by: z.enum(['thread_id', 'status', 'created_at', 'updated_at']).nullish().describe('Default: created_at.'),
  sort_order: sortOrder,
  select: z.array(z.enum(THREAD_FIELDS)).nullish(),
});

export const threadCount = threadSearch.pick({ metadata: true, values: true, status: true });

export const threadList = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(10),
  offset: z.coerce.number().int().min(0).default(0),
});

export const runList = threadList.extend({ status: z.enum(RUN_STATUSES).optional() });

/**
 * A checkpoint named by its id alone, or by a config (`{configurable: {checkpoint_id}}`) as the JS client sends
 * `before`.
 */
const checkpointRef = z
  .union([
    z.string().min(1),
    z.object({ configurable: z.object({ checkpoint_id: z.string().min(1) }).loose() }).loose(),
  ])
  .transform((ref) => (typeof ref === 'string' ? ref : ref.configurable.checkpoint_id));

export const threadHistory = z.object({
  limit: z.number().int().min(1).max(1000).default(10).describe('Most states to return.'),
  before: checkpointRef.nullish().describe('Only states older than this checkpoint (its id, or a config naming it).'),
  metadata: object()
    .nullish()
    .describe('Only checkpoints whose metadata has each of these keys with this value (e.g. `{"source": "loop"}`).'),
  checkpoint: z
    .object({ checkpoint_ns: z.string().nullish(), checkpoint_id: z.string().nullish() })
    .loose()
    .nullish()
    .describe('`checkpoint_ns`: the states of a subgraph.'),
});

const checkpointNamed = z.object({ checkpoint_id: z.string().min(1), checkpoint_ns: z.string().nullish() }).loose();

export const threadStateAt = z.object({ checkpoint: checkpointNamed });

export const threadStateUpdate = z.object({
  values: z
    .union([object(), z.array(z.unknown())])
    .nullish()
    .describe('The update, as the node would return it (several updates: an array).'),
  as_node: z.string().min(1).nullish().describe('The node the update is written as. Default: the node that ran last.'),
  checkpoint_id: z.string().min(1).nullish().describe('Update this checkpoint instead of the current one (a fork).'),
  checkpoint: z.object({ checkpoint_id: z.string().nullish(), checkpoint_ns: z.string().nullish() }).loose().nullish(),
});

export const threadStatePatch = z.object({
  metadata: object().describe("Keys merged into the latest checkpoint's metadata."),
});

export const threadHistoryQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(10).describe('Most states to return.'),
  before: z.string().min(1).optional().describe('Only states older than this checkpoint id.'),
});

const interruptAt = z.union([z.literal('*'), z.array(z.string())]).nullish();

export const runCreate = z.object({
  assistant_id: z.string().min(1).describe('An assistant UUID, or a graph name (its default assistant).'),
  input: object().nullish().describe('Graph input, e.g. {"messages": [{"role": "user", "content": "hi"}]}.'),
  command: z
    .object({ resume: z.unknown().optional(), update: z.unknown().optional(), goto: z.unknown().optional() })
    .nullish()
    .describe('Resume an interrupted thread instead of giving input.'),
  metadata: object().nullish(),
  config: z
    .looseObject({
      tags: z.array(z.string()).optional(),
      recursion_limit: z.number().int().min(1).optional(),
      configurable: object().optional(),
    })
    .nullish(),
  context: object().nullish(),
  stream_mode: z
    .union([streamMode, z.array(streamMode).min(1)])
    .nullish()
    .describe('Default: values (for a background run: every mode).'),
  stream_subgraphs: z.boolean().nullish(),
  stream_resumable: z
    .boolean()
    .nullish()
    .describe(
      'The run goes on when its client leaves (unless on_disconnect says cancel), and a join without Last-Event-ID replays it from its first event.',
    ),
  on_disconnect: z
    .enum(['cancel', 'continue'])
    .nullish()
    .describe('When the client goes away: cancel the run (default) or let it finish (default with stream_resumable).'),
  on_completion: z
    .enum(['delete', 'keep'])
    .nullish()
    .describe('Threadless runs: delete (default) or keep the temporary thread.'),
  if_not_exists: z
    .enum(['create', 'reject'])
    .nullish()
    .describe('A thread run on an unknown thread: 404 (reject, default) or create it.'),
  multitask_strategy: z
    .enum(MULTITASK_STRATEGIES)
    .nullish()
    .describe(
      'A run on a busy thread: 409 (reject, default), cancel the active run (interrupt, rollback), or wait for it (enqueue).',
    ),
  interrupt_before: interruptAt,
  interrupt_after: interruptAt,
  checkpoint_id: z.string().nullish(),
  after_seconds: z
    .number()
    .nullish()
    .refine(
      (v) => v == null || v === 0,
      'a delayed start is not supported by this server: omit after_seconds (or send 0)',
    )
    .describe('Not supported: only 0 (the run starts at once).'),
  webhook: z
    .unknown()
    .refine((v) => v == null, 'webhooks are not supported by this server: omit webhook')
    .optional()
    .describe('Not supported.'),
});
export type RunCreate = z.output<typeof runCreate>;

export const runBatch = z.array(runCreate).min(1).max(100);

const schedule = z
  .string()
  .superRefine((text, ctx) => {
    const error = scheduleError(text);
    if (error !== null) ctx.addIssue({ code: 'custom', message: `not a cron schedule: ${error}` });
  })
  .describe('Cron format, in UTC: five fields (minute hour day month weekday), or six with seconds first.');
const cronFields = {
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
  input: object().nullish(),
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

export const runCancel = z.object({
  wait: flag().default(false).describe('Answer once the run has stopped (204) instead of at once (202).'),
  action: z
    .enum(['interrupt', 'rollback'])
    .default('interrupt')
    .describe('Both stop the run and keep the state it reached (no rollback of checkpoints here).'),
});

/** A query parameter naming one mode, or several as a JSON array (as the JS client sends them). */
const modeList = <T extends readonly [string, ...string[]]>(modes: T) =>
  z
    .string()
    .transform((text) => [parseMaybeJson(text)].flat())
    .pipe(z.array(z.enum(modes)).min(1))
    .optional();

export const runJoinStream = z.object({
  cancel_on_disconnect: flag().default(false).describe('Cancel the run when this client goes away.'),
  stream_mode: modeList(STREAM_MODES).describe(
    'Only these modes of the run: one mode, or a JSON array of modes. Default: every mode the run streams.',
  ),
});

export const threadJoinStream = z.object({
  stream_mode: modeList(THREAD_STREAM_MODES).describe(
    'What to follow: `run_modes` (every event of the runs, and `run_done` after each), `lifecycle` (only `metadata` and `run_done`), `state_update` (only `values`, the state after each step). One mode or a JSON array. Default: `run_modes`.',
  ),
  stream_modes: modeList(THREAD_STREAM_MODES).describe(
    'The same as `stream_mode` (the name in the public API reference).',
  ),
});

/** `["a","b"]` → the array; anything else (a bare mode) as it is. */
function parseMaybeJson(text: string): unknown {
  if (!text.trim().startsWith('[')) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** A store namespace: its labels (each without `.`, the separator of the GET form). */
const namespace = z.array(
  z
    .string()
    .min(1)
    .refine((label) => !label.includes('.'), 'a namespace label cannot contain "."'),
);

export const storePut = z.object({
  namespace: namespace.min(1),
  key: z.string().min(1),
  value: object().describe('Any JSON object.'),
  index: z
    .union([z.literal(false), z.array(z.string())])
    .nullish()
    .describe('Accepted; this server keeps no search index.'),
  ttl: z
    .number()
    .nullish()
    .refine((v) => v == null, 'item expiry (ttl) is not supported by this server: omit ttl')
    .describe('Not supported.'),
});

export const storeGet = z.object({
  namespace: z
    .string()
    .min(1)
    .transform((text) => text.split('.'))
    .describe('Labels joined by "." (e.g. `users.u1`).'),
  key: z.string().min(1),
  refresh_ttl: z.string().optional().describe('Accepted; items do not expire.'),
});

export const storeDelete = z.object({ namespace: namespace.min(1), key: z.string().min(1) });

export const storeSearch = z.object({
  namespace_prefix: namespace.default([]).describe('Items in this namespace or under it; empty: every item.'),
  filter: object()
    .nullish()
    .describe('Fields of the value: a value to equal, or operators ($eq, $ne, $gt, $gte, $lt, $lte, $in, $nin).'),
  limit: z.number().int().min(1).max(1000).default(10),
  offset: z.number().int().min(0).default(0),
  query: z
    .string()
    .nullish()
    .describe('Accepted, not used: no semantic index (items come in namespace and key order).'),
  refresh_ttl: z.boolean().nullish().describe('Accepted; items do not expire.'),
});

export const storeNamespaces = z.object({
  prefix: z.array(z.string()).nullish().describe('Labels the namespace starts with (`*`: any one label).'),
  suffix: z.array(z.string()).nullish().describe('Labels the namespace ends with (`*`: any one label).'),
  max_depth: z.number().int().min(1).nullish().describe('Cut namespaces to this many labels (duplicates merged).'),
  limit: z.number().int().min(1).max(1000).default(100),
  offset: z.number().int().min(0).default(0),
});

export const storeItemSchema = z.object({
  namespace: z.array(z.string()),
  key: z.string(),
  value: object(),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});

// ---- responses

const timestamp = z.iso.datetime();

export const assistantSchema = z.object({
  assistant_id: z.uuid(),
  graph_id: z.string(),
  config: object(),
  context: object(),
  metadata: object(),
  name: z.string(),
  description: z.string().nullable(),
  version: z.number().int(),
  created_at: timestamp,
  updated_at: timestamp,
});

export const threadSchema = z.object({
  thread_id: z.uuid(),
  created_at: timestamp,
  updated_at: timestamp,
  metadata: object(),
  status: z.enum(THREAD_STATUSES),
  values: object().nullable(),
  config: object(),
  interrupts: z.record(z.string(), z.array(z.unknown())),
});

export const runSchema = z.object({
  run_id: z.uuid(),
  thread_id: z.uuid(),
  assistant_id: z.uuid(),
  created_at: timestamp,
  updated_at: timestamp,
  status: z.enum(RUN_STATUSES),
  metadata: object(),
  kwargs: object(),
  multitask_strategy: z.enum(MULTITASK_STRATEGIES),
});

const checkpointSchema = z.object({ thread_id: z.string(), checkpoint_ns: z.string(), checkpoint_id: z.string() });

export const threadStateSchema = z.object({
  values: z.unknown(),
  next: z.array(z.string()),
  tasks: z.array(
    z.object({ id: z.string(), name: z.string(), error: z.string().nullable(), interrupts: z.array(z.unknown()) }),
  ),
  checkpoint: checkpointSchema.nullable(),
  parent_checkpoint: checkpointSchema.nullable(),
  metadata: object().nullable(),
  created_at: timestamp.nullable(),
});

export const cronSchema = z.object({
  cron_id: z.uuid(),
  assistant_id: z.uuid(),
  thread_id: z.uuid().nullable(),
  user_id: z.string().nullable(),
  schedule: z.string(),
  payload: object(),
  next_run_date: timestamp.nullable(),
  end_time: z.string().nullable(),
  metadata: object(),
  enabled: z.boolean(),
  on_run_completed: z.enum(['delete', 'keep']),
  created_at: timestamp,
  updated_at: timestamp,
});

export const errorSchema = z.object({
  detail: z.union([
    z.string(),
    z.array(z.object({ loc: z.array(z.union([z.string(), z.number()])), msg: z.string(), type: z.string() })),
  ]),
});

export const okSchema = z.object({ ok: z.literal(true) });
export const infoSchema = z.object({
  version: z.string(),
  langgraph_js_version: z.string().nullable(),
  flags: z.record(z.string(), z.boolean()),
});
