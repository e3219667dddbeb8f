import { toJsonSchema } from '@langchain/core/utils/json_schema';
import { isZodSchemaV3, isZodSchemaV4 } from '@langchain/core/utils/types';
import {
  getConfigTypeSchema,
  getInputTypeSchema,
  getOutputTypeSchema,
  getUpdateTypeSchema,
} from '@langchain/langgraph/zod/schema';

/**
 * A graph's JSON schemas read from the graph itself, in the order the official JS server tries
 * (`graph/parser/index.mts`, getRuntimeGraphSchema): a `StateSchema` state (its own JSON schemas), then zod schemas
 * through LangGraph's registry (the state as its update type, so nothing is `required`), then zod schemas converted
 * directly, with the runtime context schema (`new StateGraph(State, ContextSchema)`) as `config`. Undefined when
 * none applies (the official server then parses the TypeScript source; this server makes a schema from the
 * channels, graph-schemas.ts).
 */
export interface RuntimeSchema {
  readonly state: unknown;
  readonly input: unknown;
  readonly output: unknown;
  readonly config: unknown;
}

interface Builder {
  _schemaRuntimeDefinition?: unknown;
  _inputRuntimeDefinition?: unknown;
  _outputRuntimeDefinition?: unknown;
  _configRuntimeSchema?: unknown;
}

interface StateSchemaLike {
  getJsonSchema(): unknown;
  getInputJsonSchema(): unknown;
}

const PARTIAL_STATE = Symbol.for('langgraph.state.partial');

const isStateSchemaLike = (v: unknown): v is StateSchemaLike =>
  typeof v === 'object' &&
  v !== null &&
  typeof (v as StateSchemaLike).getJsonSchema === 'function' &&
  typeof (v as StateSchemaLike).getInputJsonSchema === 'function';

const isZod = (v: unknown) => isZodSchemaV4(v) || isZodSchemaV3(v);

export function runtimeSchema(graph: unknown): RuntimeSchema | undefined {
  const builder = (graph as { builder?: Builder } | null)?.builder;
  if (builder === undefined) return undefined;
  return fromStateSchema(builder) ?? fromZodRegistry(graph) ?? fromZod(builder);
}

function fromStateSchema(b: Builder): RuntimeSchema | undefined {
  const { _schemaRuntimeDefinition: s, _inputRuntimeDefinition: i, _outputRuntimeDefinition: o } = b;
  if (!isStateSchemaLike(s) && !isStateSchemaLike(i) && !isStateSchemaLike(o)) return undefined;
  const state = isStateSchemaLike(s) ? s.getJsonSchema() : undefined;
  const input = isStateSchemaLike(i)
    ? i.getInputJsonSchema()
    : i === PARTIAL_STATE && isStateSchemaLike(s)
      ? s.getInputJsonSchema()
      : undefined;
  const output = isStateSchemaLike(o) ? o.getJsonSchema() : undefined;
  // The official server reads no context schema beside a StateSchema yet ("not supported yet"); this one converts it
  // as it does for any zod graph, rather than answer none.
  return state === undefined && input === undefined && output === undefined
    ? undefined
    : { state, input, output, config: convertZod(b._configRuntimeSchema) };
}

function fromZodRegistry(graph: unknown): RuntimeSchema | undefined {
  try {
    const result = {
      state: getUpdateTypeSchema(graph),
      input: getInputTypeSchema(graph),
      output: getOutputTypeSchema(graph),
      config: getConfigTypeSchema(graph),
    };
    return Object.values(result).every((v) => v == null) ? undefined : result;
  } catch {
    return undefined; // a schema LangGraph cannot convert (e.g. made by another copy of zod)
  }
}

/** A zod schema (v3 or v4, of any copy of zod) as JSON schema; undefined for anything else. */
function convertZod(schema: unknown): Record<string, unknown> | undefined {
  if (!isZod(schema)) return undefined;
  try {
    return toJsonSchema(schema as Parameters<typeof toJsonSchema>[0]);
  } catch {
    return undefined;
  }
}

function fromZod(b: Builder): RuntimeSchema | undefined {
  const convert = convertZod;
  const state = convert(b._schemaRuntimeDefinition);
  const input = convert(b._inputRuntimeDefinition) ?? (state ? { ...state, required: undefined } : undefined);
  const output = convert(b._outputRuntimeDefinition);
  const config = convert(b._configRuntimeSchema);
  return (state ?? input ?? output ?? config) ? { state, input, output, config } : undefined;
}
