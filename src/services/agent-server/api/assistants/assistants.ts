import type { Context } from 'hono';
import { z } from 'zod';
import type { AgentEnv } from '../../auth/authenticate.ts';
import { matchesFilter } from '../../auth/filters.ts';
import type { ServerContext } from '../../context.ts';
import { ApiError, conflict } from '../../errors.ts';
import type { GraphRegistry } from '../../graphs.ts';
import { newId } from '../ids.ts';
import type { Assistant, Json } from '../../store/records.ts';
import { visibleAssistant } from './lookup.ts';
import {
  assistantCount,
  assistantCreate,
  assistantDelete,
  assistantGraphQuery,
  assistantPatch,
  assistantSchema,
  assistantSearch,
} from './schemas.ts';
import { assistantIntrospectionOperations } from './introspection.ts';
import { assistantVersionOperations } from './versions.ts';
import { errorSchema } from '../common-schemas.ts';
import { matchesExactly, pageAnswer } from '../listing.ts';
import { operation, param, type Operation } from '../operations.ts';
import { removeThread } from '../threads/removal.ts';

/**
 * Assistants: a graph with its configuration, addressed by its UUID or, for
 * the default assistant of a graph, by the graph name (assistant-lookup.ts).
 * Its versions: assistant-versions.ts.
 */
const errors = {
  401: { description: 'Not authenticated.', schema: errorSchema },
  422: { description: 'Invalid request.', schema: errorSchema },
};

/** 404 unless the app has the graph `graphId`. */
function requireGraph(graphs: GraphRegistry, graphId: string): void {
  if (!graphs.has(graphId))
    throw new ApiError(404, `Graph "${graphId}" not found in this app. Graphs: ${graphs.names.join(', ')}`);
}

export function assistantOperations(ctx: ServerContext): Operation[] {
  const { store, graphs } = ctx;
  /** Assistants matching `body` that the `assistants:search` handler lets the caller see. */
  const matching = async (c: Context<AgentEnv>, body: z.output<typeof assistantCount>, paging: Json = {}) => {
    const value: Json = { graph_id: body.graph_id, metadata: body.metadata ?? {}, ...paging };
    const filter = await c.get('auth').authorize('assistants', 'search', value);
    const name = body.name?.toLowerCase();
    return (await store.listAssistants()).filter(
      (a) =>
        (body.graph_id == null || a.graph_id === body.graph_id) &&
        (name === undefined || a.name.toLowerCase().includes(name)) &&
        matchesExactly(a.metadata, body.metadata) &&
        matchesFilter(a.metadata, filter),
    );
  };
  return [
    operation({
      method: 'post',
      path: '/assistants',
      operationId: 'create_assistant',
      summary: 'Create an assistant',
      tag: 'Assistants',
      body: assistantCreate,
      responses: {
        200: { description: 'The assistant.', schema: assistantSchema },
        ...errors,
        404: { description: 'Unknown graph.', schema: errorSchema },
        409: { description: 'The assistant id exists.', schema: errorSchema },
      },
      async handler(c, { body }) {
        const value: Json = { ...body, assistant_id: body.assistant_id ?? newId(), metadata: { ...body.metadata } };
        const filter = await c.get('auth').authorize('assistants', 'create', value);
        requireGraph(graphs, body.graph_id);
        const id = String(value.assistant_id);
        const existing = await store.getAssistant(id);
        if (existing !== null) {
          // As for threads: the existing assistant only to a caller who may read it; otherwise 409, as for a clash.
          if (body.if_exists === 'do_nothing' && matchesFilter(existing.metadata, filter)) {
            const readable = await c.get('auth').authorize('assistants', 'read', { assistant_id: id });
            if (matchesFilter(existing.metadata, readable)) return c.json(existing);
          }
          throw conflict(`Assistant ${id} already exists`);
        }
        const now = new Date().toISOString();
        const assistant: Assistant = {
          assistant_id: id,
          graph_id: body.graph_id,
          config: body.config ?? {},
          context: body.context ?? {},
          metadata: (value.metadata as Json | undefined) ?? {},
          name: body.name ?? 'Untitled',
          description: body.description ?? null,
          version: 1,
          created_at: now,
          updated_at: now,
        };
        await store.putAssistant(assistant);
        return c.json(assistant);
      },
    }),
    operation({
      method: 'get',
      path: '/assistants/{assistant_id}',
      operationId: 'get_assistant',
      summary: 'Get an assistant',
      description: 'By UUID, or by graph name for the default assistant of that graph.',
      tag: 'Assistants',
      responses: {
        200: { description: 'The assistant.', schema: assistantSchema },
        ...errors,
        404: { description: 'Unknown assistant.', schema: errorSchema },
      },
      handler: async (c) => c.json(await visibleAssistant(c, ctx, param(c, 'assistant_id'), 'read')),
    }),
    operation({
      method: 'get',
      path: '/assistants/{assistant_id}/graph',
      operationId: 'get_assistant_graph',
      summary: 'Get the graph of an assistant',
      description:
        'Its nodes and edges, as LangGraph draws them (`assistants.getGraph`); `xray` expands subgraphs (true, or how many levels deep).',
      tag: 'Assistants',
      query: assistantGraphQuery,
      responses: {
        200: {
          description: 'Nodes and edges.',
          schema: z.object({
            nodes: z.array(z.record(z.string(), z.unknown())),
            edges: z.array(z.record(z.string(), z.unknown())),
          }),
        },
        ...errors,
        404: { description: 'Unknown assistant.', schema: errorSchema },
      },
      async handler(c, { query }) {
        const assistant = await visibleAssistant(c, ctx, param(c, 'assistant_id'), 'read');
        const configurable = {
          ...(assistant.config as { configurable?: Json }).configurable,
          assistant_id: assistant.assistant_id,
          graph_id: assistant.graph_id,
        };
        const graph = await graphs.get(assistant.graph_id, { configurable });
        return c.json((await graph.getGraphAsync({ configurable, xray: query.xray })).toJSON());
      },
    }),
    operation({
      method: 'patch',
      path: '/assistants/{assistant_id}',
      operationId: 'patch_assistant',
      summary: 'Update an assistant',
      description:
        'Replaces config and context, merges metadata, sets graph, name and description when given; a new version after the newest (see /versions).',
      tag: 'Assistants',
      body: assistantPatch,
      responses: {
        200: { description: 'The updated assistant.', schema: assistantSchema },
        ...errors,
        404: { description: 'Unknown assistant or graph.', schema: errorSchema },
      },
      async handler(c, { body }) {
        const id = param(c, 'assistant_id');
        const value: Json = {
          assistant_id: id,
          ...body,
          metadata: body.metadata == null ? body.metadata : { ...body.metadata },
        };
        const assistant = await visibleAssistant(c, ctx, id, 'update', value);
        if (body.graph_id != null) requireGraph(graphs, body.graph_id);
        const metadata = value.metadata as Json | null | undefined;
        const updated: Assistant = {
          ...assistant,
          graph_id: body.graph_id ?? assistant.graph_id,
          config: body.config ?? assistant.config,
          context: body.context ?? assistant.context,
          metadata: metadata == null ? assistant.metadata : { ...assistant.metadata, ...metadata },
          name: body.name ?? assistant.name,
          description: body.description === undefined ? assistant.description : body.description,
          version:
            Math.max(
              assistant.version,
              ...(await store.listAssistantVersions(assistant.assistant_id)).map((v) => v.version),
            ) + 1,
          updated_at: new Date().toISOString(),
        };
        await store.putAssistant(updated);
        return c.json(updated);
      },
    }),
    ...assistantIntrospectionOperations(ctx),
    ...assistantVersionOperations(ctx),
    operation({
      method: 'delete',
      path: '/assistants/{assistant_id}',
      operationId: 'delete_assistant',
      summary: 'Delete an assistant',
      description:
        'With delete_threads=true, also the threads (with their runs and state) whose metadata.assistant_id is this assistant and that the caller may delete.',
      tag: 'Assistants',
      query: assistantDelete,
      responses: {
        204: { description: 'Deleted.' },
        ...errors,
        404: { description: 'Unknown assistant.', schema: errorSchema },
      },
      async handler(c, { query }) {
        const assistant = await visibleAssistant(c, ctx, param(c, 'assistant_id'), 'delete');
        await store.deleteAssistant(assistant.assistant_id);
        if (query.delete_threads) {
          const filter = await c.get('auth').authorize('threads', 'delete', { assistant_id: assistant.assistant_id });
          const threads = (await store.listThreads()).filter(
            (t) => t.metadata.assistant_id === assistant.assistant_id && matchesFilter(t.metadata, filter),
          );
          for (const t of threads) await removeThread(ctx, t.thread_id);
        }
        return c.body(null, 204);
      },
    }),
    operation({
      method: 'post',
      path: '/assistants/search',
      operationId: 'search_assistants',
      summary: 'Search assistants',
      description: 'A bare array of one page; X-Pagination-Total counts every match.',
      tag: 'Assistants',
      body: assistantSearch,
      responses: {
        200: {
          description: 'Matching assistants.',
          schema: z.array(assistantSchema),
          headers: {
            'X-Pagination-Total': 'Number of matches.',
            'X-Pagination-Next': 'Offset of the next page, when there is one.',
          },
        },
        ...errors,
      },
      handler: async (c, { body }) =>
        pageAnswer(c, await matching(c, body, { limit: body.limit, offset: body.offset }), body, {
          sortBy: 'created_at',
          tieBreak: 'assistant_id',
        }),
    }),
    operation({
      method: 'post',
      path: '/assistants/count',
      operationId: 'count_assistants',
      summary: 'Count assistants',
      description: 'How many assistants a search with the same filters would find (`assistants.count`).',
      tag: 'Assistants',
      body: assistantCount,
      responses: { 200: { description: 'The number of matching assistants.', schema: z.number().int() }, ...errors },
      handler: async (c, { body }) => c.json((await matching(c, body)).length),
    }),
  ];
}
