import { z } from 'zod';
import { STREAM_MODES } from '../../runs/stream-modes.ts';
import { MULTITASK_STRATEGIES, RUN_STATUSES } from '../../store/records.ts';
import { flag, modeList, object, timestamp } from '../common-schemas.ts';

const streamMode = z.enum(STREAM_MODES);
const interruptAt = z.union([z.literal('*'), z.array(z.string())]).nullish();

export const runCreate = z.object({
  assistant_id: z.string().min(1).describe('An assistant UUID, or a graph name (its default assistant).'),
  input: z
    .unknown()
    .optional()
    .describe(
      'Graph input, e.g. {"messages": [{"role": "user", "content": "hi"}]}; any JSON value (a functional-API entrypoint may take a string).',
    ),
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
      metadata: object().optional(),
      run_name: z.string().optional(),
      max_concurrency: z.number().int().min(1).optional(),
    })
    .nullish(),
  context: object().nullish(),
  stream_mode: z
    .union([streamMode, z.array(streamMode)])
    .nullish()
    .describe(
      'Default (also for an empty list, which React useStream sends when nothing reads the stream): values (for a background run: every mode).',
    ),
  stream_subgraphs: z.boolean().nullish(),
  stream_resumable: z
    .boolean()
    .nullish()
    .describe('A join without Last-Event-ID replays the run from its first event.'),
  on_disconnect: z
    .enum(['cancel', 'continue'])
    .nullish()
    .describe(
      'When the client goes away: let the run finish (continue, the default, as the official server) or cancel it.',
    ),
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
  checkpoint: z
    .object({ checkpoint_id: z.string().nullish(), checkpoint_ns: z.string().nullish() })
    .loose()
    .nullish()
    .describe(
      'Run from this checkpoint of the thread (a fork: what React useStream sends to edit or regenerate a message), as a state names it.',
    ),
  after_seconds: z
    .number()
    .min(0)
    .max(7 * 24 * 3600, 'after_seconds is at most a week')
    .nullish()
    .describe(
      'Start the run this many seconds later: it is listed as pending until then, and can be cancelled meanwhile.',
    ),
  webhook: z
    .string()
    .max(2048)
    .nullish()
    .describe(
      'An http(s) URL called (POST, the run as JSON with its final values and status) when the run ends; its host must be public unless WEBHOOK_HOSTS_ALLOWED names it.',
    ),
  durability: z
    .enum(['sync', 'async', 'exit'])
    .nullish()
    .describe(
      "When checkpoints are written: sync (before the next step), async (while it runs, LangGraph's default), exit (only when the run ends).",
    ),
  checkpoint_during: z
    .boolean()
    .nullish()
    .describe('Deprecated form of durability: false is exit, true is async (durability wins when both are given).'),
});
export type RunCreate = z.output<typeof runCreate>;

export const runBatch = z.array(runCreate).min(1).max(100);

export const runCancel = z.object({
  wait: flag().default(false).describe('Answer once the run has stopped (204) instead of at once (202).'),
  action: z
    .enum(['interrupt', 'rollback'])
    .default('interrupt')
    .describe(
      'interrupt: the run stops and its thread keeps the state it reached. rollback: the run is deleted and its thread goes back to its state before the run.',
    ),
});

export const runJoinStream = z.object({
  cancel_on_disconnect: flag().default(false).describe('Cancel the run when this client goes away.'),
  stream_mode: modeList(STREAM_MODES).describe(
    'Only these modes of the run: one mode, or a JSON array of modes. Default: every mode the run streams.',
  ),
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
