import { z } from 'zod';
import { object, timestamp } from '../common-schemas.ts';

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

/** A checkpoint by its id, or a subgraph's latest by its namespace alone (a task's `checkpoint`). */
const checkpointNamed = z
  .object({ checkpoint_id: z.string().min(1).nullish(), checkpoint_ns: z.string().nullish() })
  .loose()
  .refine((c) => !!c.checkpoint_id || !!c.checkpoint_ns, 'name a checkpoint_id, or the checkpoint_ns of a subgraph');

const subgraphs = z
  .union([z.boolean(), z.enum(['true', 'false'])])
  .transform((v) => v === true || v === 'true')
  .default(false)
  .describe("Nest each subgraph task's own state in `tasks[].state`.");

export const threadStateAt = z.object({ checkpoint: checkpointNamed, subgraphs });

export const threadStateQuery = z.object({ subgraphs });

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

const checkpointSchema = z.object({
  thread_id: z.string(),
  checkpoint_ns: z.string(),
  checkpoint_id: z.string(),
  checkpoint_map: z.record(z.string(), z.unknown()).nullable(),
});

export const threadStateSchema = z.object({
  values: z.unknown(),
  next: z.array(z.string()),
  tasks: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      error: z.string().nullable(),
      interrupts: z.array(z.unknown()),
      path: z.array(z.unknown()).nullable(),
      checkpoint: z
        .object({ thread_id: z.string(), checkpoint_ns: z.string() })
        .loose()
        .nullable()
        .describe("A subgraph task: its checkpoint namespace (read or update the subgraph's state through it)."),
      state: z.unknown().describe("With `subgraphs`: the subgraph task's own state (this same shape)."),
      result: z.unknown().describe('What the task wrote, once it has run.'),
    }),
  ),
  checkpoint: checkpointSchema.nullable(),
  parent_checkpoint: checkpointSchema.nullable(),
  metadata: object().nullable(),
  created_at: timestamp.nullable(),
});
