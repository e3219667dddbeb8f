import { z } from 'zod';
import { matchesFilter } from './authorize.ts';
import type { ServerContext } from './context.ts';
import { ApiError, conflict, notFound } from './errors.ts';
import type { GraphRegistry } from './graphs.ts';
import { newId, uuid5 } from './ids.ts';
import { matchesExactly, pageAnswer } from './listing.ts';
import { operation, param, type Operation } from './operations.ts';
import { assistantCreate, assistantSchema, assistantSearch, errorSchema } from './schemas.ts';
import type { AgentStore } from './store.ts';
import type { Assistant, Json } from './types.ts';

/**
 * Assistants: a graph with its configuration. Every graph of the app gets
 * a default assistant at start (id derived from the graph name, metadata
 * `created_by: system`); an assistant is addressed by its UUID or, for the
 * default one, by the graph name.
 */
export const defaultAssistantId = (graphId: string): string => uuid5(graphId);

export async function ensureDefaultAssistants(store: AgentStore, graphs: GraphRegistry): Promise<void> {
  for (const graphId of graphs.names) {
    const id = defaultAssistantId(graphId);
    if ((await store.getAssistant(id)) !== null) continue;
    const now = new Date().toISOString();
    await store.putAssistant({
      assistant_id: id,
      graph_id: graphId,
      config: {},
      context: {},
      metadata: { created_by: 'system' },
      name: graphId,
      description: null,
      version: 1,
      created_at: now,
      updated_at: now,
    });
  }
}

/** The assistant `idOrGraph` names (a UUID, or a graph name for its default assistant), or null. */
export async function findAssistant(store: AgentStore, graphs: GraphRegistry, idOrGraph: string): Promise<Assistant | null> {
  return store.getAssistant(graphs.has(idOrGraph) ? defaultAssistantId(idOrGraph) : idOrGraph);
}

const errors = { 401: { description: 'Not authenticated.', schema: errorSchema }, 422: { description: 'Invalid request.', schema: errorSchema } };

export function assistantOperations({ store, graphs }: ServerContext): Operation[] {
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
        if (!graphs.has(body.graph_id)) throw new ApiError(404, `Graph "${body.graph_id}" not found in this app. Graphs: ${graphs.names.join(', ')}`);
        const id = String(value.assistant_id);
        const existing = await store.getAssistant(id);
        if (existing !== null) {
          if (body.if_exists === 'do_nothing' && matchesFilter(existing.metadata, filter)) return c.json(existing);
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
      responses: { 200: { description: 'The assistant.', schema: assistantSchema }, ...errors, 404: { description: 'Unknown assistant.', schema: errorSchema } },
      async handler(c) {
        const id = param(c, 'assistant_id');
        const filter = await c.get('auth').authorize('assistants', 'read', { assistant_id: id });
        const assistant = await findAssistant(store, graphs, id);
        if (assistant === null || !matchesFilter(assistant.metadata, filter)) throw notFound('Assistant', id);
        return c.json(assistant);
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
          headers: { 'X-Pagination-Total': 'Number of matches.', 'X-Pagination-Next': 'Offset of the next page, when there is one.' },
        },
        ...errors,
      },
      async handler(c, { body }) {
        const value: Json = { graph_id: body.graph_id, metadata: body.metadata ?? {}, limit: body.limit, offset: body.offset };
        const filter = await c.get('auth').authorize('assistants', 'search', value);
        const name = body.name?.toLowerCase();
        const found = (await store.listAssistants()).filter(
          (a) =>
            (body.graph_id == null || a.graph_id === body.graph_id) &&
            (name === undefined || a.name.toLowerCase().includes(name)) &&
            matchesExactly(a.metadata, body.metadata) &&
            matchesFilter(a.metadata, filter),
        );
        return pageAnswer(c, found, body, { sortBy: 'created_at', tieBreak: 'assistant_id' });
      },
    }),
  ];
}
