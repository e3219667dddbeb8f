import { getRuntimeGraphSchema } from '@langchain/langgraph-api/schema';
import type { GraphSchema, SourceSchemas } from './schema-parser.ts';

/**
 * The JSON schemas of a graph and of its subgraphs, composed as the official JS server's routes compose them
 * (`api/assistants.mts`), with its own functions: first what the graph itself carries at runtime
 * (`getRuntimeGraphSchema`: a `StateSchema` state, zod through LangGraph's registry, then zod converted directly, the
 * runtime context schema as `config`); else what its TypeScript source declares (source-schemas.ts), the root graph
 * under its export name and each subgraph under `<export>|<namespace>` (the root's when the parser found none).
 * A schema neither gives is absent from the answer, as the official server's JSON leaves it out.
 */
export interface GraphSchemasAnswer {
  readonly graph_id: string;
  readonly input_schema: unknown;
  readonly output_schema: unknown;
  readonly state_schema: unknown;
  readonly config_schema: unknown;
  /** From JS a config schema and a context schema cannot be told apart: the same schema (the official server's). */
  readonly context_schema: unknown;
}

type FromSource = () => Promise<SourceSchemas>;

interface WithSubgraphs {
  getSubgraphsAsync?(namespace?: string, recurse?: boolean): AsyncIterable<[string, unknown]>;
  getSubgraphs?(namespace?: string, recurse?: boolean): Iterable<[string, unknown]>;
}

export async function graphSchemas(
  graphId: string,
  graph: unknown,
  fromSource: FromSource,
): Promise<GraphSchemasAnswer> {
  const schema = (await runtimeSchema(graph)) ?? rootOf(await fromSource()).schema;
  return {
    graph_id: graphId,
    input_schema: schema.input,
    output_schema: schema.output,
    state_schema: schema.state,
    config_schema: schema.config,
    context_schema: schema.config,
  };
}

/** Each subgraph under `namespace` (all of them with `recurse`) by its namespace, with its schemas. */
export async function subgraphSchemas(
  graph: unknown,
  namespace: string | undefined,
  recurse: boolean,
  fromSource: FromSource,
): Promise<Record<string, GraphSchema>> {
  const g = graph as WithSubgraphs;
  const found: Iterable<[string, unknown]> | AsyncIterable<[string, unknown]> =
    g.getSubgraphsAsync?.(namespace, recurse) ?? g.getSubgraphs?.(namespace, recurse) ?? [];
  const out: Record<string, GraphSchema> = {};
  for await (const [ns, subgraph] of found) {
    const runtime = await runtimeSchema(subgraph);
    if (runtime !== undefined) {
      out[ns] = runtime;
      continue;
    }
    const { name, schema, all } = rootOf(await fromSource());
    out[ns] = all[`${name}|${ns}`] ?? schema;
  }
  return out;
}

function runtimeSchema(graph: unknown): Promise<GraphSchema | undefined> {
  return getRuntimeGraphSchema(graph as Parameters<typeof getRuntimeGraphSchema>[0]);
}

/** The root graph's entry: the one name without `|` (none when the source could not be parsed). */
function rootOf(all: SourceSchemas): { name: string; schema: GraphSchema; all: SourceSchemas } {
  const name = Object.keys(all).find((k) => !k.includes('|')) ?? '';
  return { name, schema: all[name] ?? {}, all };
}
