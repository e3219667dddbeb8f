import type { Context } from 'hono';
import type { AgentEnv } from '../../auth/authenticate.ts';
import { matchesFilter, type Action } from '../../auth/filters.ts';
import type { ServerContext } from '../../context.ts';
import { notFound } from '../../errors.ts';
import type { GraphDefaults } from '../../graph-defaults.ts';
import type { GraphRegistry } from '../../graphs.ts';
import { uuid5 } from '../ids.ts';
import type { AgentStore } from '../../store/agent-store.ts';
import type { Assistant, Json } from '../../store/records.ts';

/**
 * Finding an assistant: by its UUID or, for the default assistant of a graph, by the graph name. Every graph of the
 * app gets its default assistant at start (id derived from the graph name, metadata `created_by: system`).
 */
export const defaultAssistantId = (graphId: string): string => uuid5(graphId);

export async function ensureDefaultAssistants(
  store: AgentStore,
  graphs: GraphRegistry,
  defaults: (graphId: string) => GraphDefaults = () => ({ config: {}, context: {}, description: null }),
): Promise<void> {
  for (const graphId of graphs.names) {
    const id = defaultAssistantId(graphId);
    if ((await store.getAssistant(id)) !== null) continue;
    const now = new Date().toISOString();
    const { config, context, description } = defaults(graphId);
    await store.putAssistant({
      assistant_id: id,
      graph_id: graphId,
      config,
      context,
      metadata: { created_by: 'system' },
      name: graphId,
      description,
      version: 1,
      created_at: now,
      updated_at: now,
    });
  }
}

/** The assistant `idOrGraph` names (a UUID, or a graph name for its default assistant), or null. */
export async function findAssistant(
  store: AgentStore,
  graphs: GraphRegistry,
  idOrGraph: string,
): Promise<Assistant | null> {
  return store.getAssistant(graphs.has(idOrGraph) ? defaultAssistantId(idOrGraph) : idOrGraph);
}

/**
 * The assistant, if it exists and the caller may `action` it; 404 otherwise. `value` is what the handler sees (and may
 * change).
 */
export async function visibleAssistant(
  c: Context<AgentEnv>,
  { store, graphs }: ServerContext,
  id: string,
  action: Action,
  value: Json = { assistant_id: id },
): Promise<Assistant> {
  const filter = await c.get('auth').authorize('assistants', action, value);
  const assistant = await findAssistant(store, graphs, id);
  if (assistant === null || !matchesFilter(assistant.metadata, filter)) throw notFound('Assistant', id);
  return assistant;
}
