import { z } from 'zod';
import { flag, object, page, sortOrder, timestamp } from '../common-schemas.ts';

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
