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
 * its subgraphs' (`assistants.getSubgraphs`, optionally under a namespace and recursively), as the official JS server
 * gives them (graph-schemas.ts).
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
/** A subgraph's schemas under the official JS server's keys (the public client's type says `state_schema`, ...). */
const subgraphSchemaSchema = z.object({
  state: z.unknown(),
  input: z.unknown(),
  output: z.unknown(),
  config: z.unknown(),
});
const subgraphsQuery = z.object({
  recurse: flag().default(false).describe('Also the subgraphs of subgraphs, with their full namespaces (a|b).'),
});

export function assistantIntrospectionOperations(ctx: ServerContext): Operation[] {
  /** The assistant's graph, built with the assistant's config (a factory may depend on it). */
  const graphOf = async (c: Context<AgentEnv>) => {
    const assistant = await visibleAssistant(c, ctx, param(c, 'assistant_id'), 'read');
    const configurable = {
      ...(assistant.config as { configurable?: Json }).configurable,
      assistant_id: assistant.assistant_id,
      graph_id: assistant.graph_id,
    };
    const graph = await ctx.graphs.get(assistant.graph_id, { configurable });
    return { assistant, graph, fromSource: () => ctx.sourceSchemas.of(assistant.graph_id) };
  };
  const subgraphs = async (c: Context<AgentEnv>, namespace: string | undefined, recurse: boolean) => {
    const { graph, fromSource } = await graphOf(c);
    return c.json(await subgraphSchemas(graph, namespace, recurse, fromSource));
  };
  const subgraphsAnswer = {
    200: {
      description: 'Each subgraph by its namespace, with its schemas (`state`, `input`, `output`, `config`).',
      schema: z.record(z.string(), subgraphSchemaSchema),
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
        "Input, output, state, config and context schemas of the assistant's graph: from its runtime schemas (StateSchema, zod), else read from its TypeScript source (an Annotation state). A schema the graph does not declare is absent.",
      tag: 'Assistants',
      responses: { 200: { description: 'The schemas.', schema: graphSchemaSchema }, ...answers },
      async handler(c) {
        const { assistant, graph, fromSource } = await graphOf(c);
        return c.json(await graphSchemas(assistant.graph_id, graph, fromSource));
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
