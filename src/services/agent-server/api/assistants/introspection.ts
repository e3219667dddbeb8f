import type { Context } from 'hono';
import { z } from 'zod';
import type { AgentEnv } from '../../auth/authenticate.ts';
import type { ServerContext } from '../../context.ts';
import type { Json } from '../../store/records.ts';
import { visibleAssistant } from './lookup.ts';
import { errorSchema, flag } from '../common-schemas.ts';
import { graphSchemas, subgraphSchemas } from './graph-schemas.ts';
import { operation, param, type Operation } from '../operations.ts';

/**
 * What forms and the design studio read about an assistant's graph: its JSON schemas (`assistants.getSchemas`) and
 * its subgraphs' (`assistants.getSubgraphs`, optionally under a namespace and recursively). See graph-schemas.ts for
 * how exact the schemas are.
 */
const graphSchemaSchema = z.object({
  graph_id: z.string(),
  input_schema: z.unknown(),
  output_schema: z.unknown(),
  state_schema: z.unknown(),
  config_schema: z.unknown(),
  context_schema: z.unknown(),
});
const answers = {
  401: { description: 'Not authenticated.', schema: errorSchema },
  404: { description: 'Unknown assistant.', schema: errorSchema },
};
const subgraphsQuery = z.object({
  recurse: flag().default(false).describe('Also the subgraphs of subgraphs, with their full namespaces (a|b).'),
});

interface WithSubgraphs {
  getSubgraphsAsync?(namespace?: string, recurse?: boolean): AsyncIterable<[string, unknown]>;
  getSubgraphs?(namespace?: string, recurse?: boolean): Iterable<[string, unknown]>;
}

export function assistantIntrospectionOperations(ctx: ServerContext): Operation[] {
  /** The assistant's graph, built with the assistant's config (a factory may depend on it). */
  const graphOf = async (c: Context<AgentEnv>) => {
    const assistant = await visibleAssistant(c, ctx, param(c, 'assistant_id'), 'read');
    const configurable = {
      ...(assistant.config as { configurable?: Json }).configurable,
      assistant_id: assistant.assistant_id,
      graph_id: assistant.graph_id,
    };
    return { assistant, graph: await ctx.graphs.get(assistant.graph_id, { configurable }) };
  };
  const subgraphs = async (c: Context<AgentEnv>, namespace: string | undefined, recurse: boolean) => {
    const { graph } = await graphOf(c);
    const g = graph as unknown as WithSubgraphs;
    const found: Iterable<[string, unknown]> | AsyncIterable<[string, unknown]> =
      g.getSubgraphsAsync?.(namespace, recurse) ?? g.getSubgraphs?.(namespace, recurse) ?? [];
    const out: Record<string, unknown> = {};
    for await (const [ns, subgraph] of found) out[ns] = subgraphSchemas(ns, subgraph);
    return c.json(out);
  };
  const subgraphsAnswer = {
    200: {
      description: 'Each subgraph by its namespace, with its schemas.',
      schema: z.record(
        z.string(),
        graphSchemaSchema.extend({ state: z.unknown(), input: z.unknown(), output: z.unknown(), config: z.unknown() }),
      ),
    },
    ...answers,
  };
  return [
    operation({
      method: 'get',
      path: '/assistants/{assistant_id}/schemas',
      operationId: 'get_assistant_schemas',
      summary: 'Get the JSON schemas of an assistant',
      description:
        "Input, output, state, config and context schemas of the assistant's graph: exact for a zod state schema, one untyped property per channel for an Annotation state.",
      tag: 'Assistants',
      responses: { 200: { description: 'The schemas.', schema: graphSchemaSchema }, ...answers },
      async handler(c) {
        const { assistant, graph } = await graphOf(c);
        return c.json(graphSchemas(assistant.graph_id, graph));
      },
    }),
    operation({
      method: 'get',
      path: '/assistants/{assistant_id}/subgraphs',
      operationId: 'get_assistant_subgraphs',
      summary: 'Get the subgraphs of an assistant',
      tag: 'Assistants',
      query: subgraphsQuery,
      responses: subgraphsAnswer,
      handler: (c, { query }) => subgraphs(c, undefined, query.recurse),
    }),
    operation({
      method: 'get',
      path: '/assistants/{assistant_id}/subgraphs/{namespace}',
      operationId: 'get_assistant_subgraphs_by_namespace',
      summary: 'Get the subgraphs of an assistant under a namespace',
      tag: 'Assistants',
      query: subgraphsQuery,
      responses: subgraphsAnswer,
      handler: (c, { query }) => subgraphs(c, param(c, 'namespace'), query.recurse),
    }),
  ];
}
