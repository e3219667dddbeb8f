import {
  getConfigTypeSchema,
  getInputTypeSchema,
  getOutputTypeSchema,
  getStateTypeSchema,
} from '@langchain/langgraph/zod/schema';

/**
 * The JSON schemas of a graph (`GET /assistants/{id}/schemas`, and each subgraph of `/subgraphs`), in the shape of
 * the public client's `GraphSchema`. A graph whose state is a zod schema gets its schemas from it, exactly (LangGraph's
 * own `@langchain/langgraph/zod/schema`, as the official server). Otherwise (an `Annotation` state) they are made,
 * best effort, from the state's channels: an object with one property of any type per channel. `config_schema` and
 * `context_schema` are the graph's context (config) schema: from JS the two cannot be told apart, as the official
 * server says; null when the graph declares none.
 */
export interface GraphSchemas {
  readonly graph_id: string;
  readonly input_schema: unknown;
  readonly output_schema: unknown;
  readonly state_schema: unknown;
  readonly config_schema: unknown;
  readonly context_schema: unknown;
}

export function graphSchemas(graphId: string, graph: unknown): GraphSchemas {
  const exact = (get: (g: unknown) => unknown): unknown => {
    try {
      return get(graph) ?? null;
    } catch {
      return null; // a schema LangGraph cannot convert (e.g. made by another copy of zod): best effort below
    }
  };
  const channels = channelsSchema(graphId, graph);
  const config = exact(getConfigTypeSchema);
  return {
    graph_id: graphId,
    input_schema: exact(getInputTypeSchema) ?? channels,
    output_schema: exact(getOutputTypeSchema) ?? channels,
    state_schema: exact(getStateTypeSchema) ?? channels,
    config_schema: config,
    context_schema: config,
  };
}

/** `{type: object, properties: {<channel>: {}}}` from the graph's state channels; null when it has none. */
function channelsSchema(title: string, graph: unknown): unknown {
  const builder = (graph as { builder?: { channels?: Record<string, unknown> } } | null)?.builder;
  const names = Object.keys(builder?.channels ?? {}).filter((n) => !n.startsWith('__') && !n.startsWith('branch:'));
  if (names.length === 0) return null;
  return {
    title,
    type: 'object',
    properties: Object.fromEntries(names.map((n) => [n, {}])),
    $schema: 'http://json-schema.org/draft-07/schema#',
  };
}
