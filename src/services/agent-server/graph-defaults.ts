import { AppConfigError } from './app-config.ts';
import type { Json } from './store/records.ts';

/**
 * Per-graph configuration of the default assistants, as the official server takes it: `LANGGRAPH_CONFIG` (in the
 * server's environment, or in the `env` block of langgraph.json) is a JSON object mapping a graph name to the config
 * of its default assistant (`configurable`, `tags`, `recursion_limit`, …), whose `context` key is the assistant's
 * context. A graph's `description` in langgraph.json becomes its default assistant's description. Applied when the
 * default assistant is created (an existing one is kept as it is, as with `if_exists: do_nothing`).
 */
export interface GraphDefaults {
  readonly config: Json;
  readonly context: Json;
  readonly description: string | null;
}

export function graphDefaults(
  descriptions: ReadonlyMap<string, string>,
  env: NodeJS.ProcessEnv = process.env,
): (graphId: string) => GraphDefaults {
  let perGraph: Record<string, Json> = {};
  const text = env.LANGGRAPH_CONFIG;
  if (text !== undefined && text.trim() !== '') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new AppConfigError('LANGGRAPH_CONFIG: not valid JSON (expected {"<graph>": {"configurable": {...}}})');
    }
    if (!isObject(parsed) || !Object.values(parsed).every(isObject))
      throw new AppConfigError('LANGGRAPH_CONFIG: must map each graph name to a config object');
    perGraph = parsed as Record<string, Json>;
  }
  return (graphId) => {
    const { context, ...config } = perGraph[graphId] ?? {};
    return {
      config,
      context: isObject(context) ? context : {},
      description: descriptions.get(graphId) ?? null,
    };
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
