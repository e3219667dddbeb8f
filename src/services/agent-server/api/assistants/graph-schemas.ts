import { runtimeSchema } from './runtime-schema.ts';

/**
 * The JSON schemas of a graph (`GET /assistants/{id}/schemas`), in the shape of the public client's `GraphSchema`,
 * read from the graph as the official JS server reads them (runtime-schema.ts): exact for zod and `StateSchema`
 * states, and the runtime context schema (`new StateGraph(State, ContextSchema)`) as `config_schema`. Where the
 * official server falls back to parsing the TypeScript source (an `Annotation` state), this server makes the
 * schemas, best effort, from the state's channels: an object with one property of any type per channel.
 * `config_schema` and `context_schema` are the same schema: from JS the two cannot be told apart, as the official
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
  const found = runtimeSchema(graph);
  const channels = channelsSchema(graphId, graph);
  const config = found?.config ?? null;
  return {
    graph_id: graphId,
    input_schema: found?.input ?? channels,
    output_schema: found?.output ?? channels,
    state_schema: found?.state ?? channels,
    config_schema: config,
    context_schema: config,
  };
}

/**
 * A subgraph's entry of `/assistants/{id}/subgraphs`: the official JS server answers `{state, input, output,
 * config}` per namespace; the public client's type (and the Python server) name them `state_schema` and so on. Both
 * sets of keys are given, so either client reads what it expects.
 */
export function subgraphSchemas(namespace: string, graph: unknown): Record<string, unknown> {
  const schemas = graphSchemas(namespace, graph);
  return {
    state: schemas.state_schema,
    input: schemas.input_schema,
    output: schemas.output_schema,
    config: schemas.config_schema,
    ...schemas,
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
