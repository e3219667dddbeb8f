import type { BaseCheckpointSaver, BaseStore } from '@langchain/langgraph';
import { GraphLoadError, importExport, type AppConfig } from './app-config.ts';
import { toPlain } from './serialize.ts';
import { withRunMetadata } from './store/run-metadata-checkpointer.ts';

/**
 * The graphs of the app, ready to run. An export may be a compiled graph
 * (`StateGraph(...).compile()`), an uncompiled StateGraph (compiled here),
 * or a factory `(config) => graph` (sync or async) called for each run, and
 * for each read or update of a thread's state with the config of the thread's
 * last run (so a graph can depend on the run's config, and `as_node` finds the
 * nodes that run had). A wrapper holding its compiled graph at `.graph`
 * (LangChain's `createAgent`) is unwrapped. Every graph runs on the server's
 * checkpointer, which is what gives threads their state, and with the
 * server's store (`config.store`, long-term memory shared by all threads).
 */
export interface StateSnapshotLike {
  readonly values: unknown;
  readonly next: readonly string[];
  readonly tasks: readonly {
    id: string;
    name: string;
    error?: unknown;
    interrupts?: readonly unknown[];
    result?: unknown;
    path?: readonly unknown[];
    /** A subgraph task: its config (`{configurable: {thread_id, checkpoint_ns}}`), or its whole state (`subgraphs`). */
    state?: unknown;
  }[];
  readonly metadata?: unknown;
  readonly config?: { configurable?: Record<string, unknown> };
  readonly parentConfig?: { configurable?: Record<string, unknown> };
  readonly createdAt?: string;
}

/** The part of a compiled LangGraph graph the server uses. */
/** An event of `streamEvents(..., {version: 'v3'})`: a protocol event of LangGraph's own, numbered per run. */
export interface GraphProtocolEvent {
  readonly method: string;
  readonly params: { readonly namespace: string[]; readonly data: unknown; readonly node?: string };
}

export interface RunnableGraph {
  stream(input: unknown, options: Record<string, unknown>): Promise<AsyncIterable<unknown>>;
  /** LangChain's callback events (`version: 'v2'`), for the `events` stream mode. */
  streamEvents(
    input: unknown,
    options: Record<string, unknown> & { version: 'v2' },
  ): AsyncIterable<{ event: string; run_id: string; tags?: string[]; data?: { chunk?: unknown } }>;
  /** The thread-centric protocol's events (`version: 'v3'`), for runs started through it (protocol/). */
  streamEvents(
    input: unknown,
    options: Record<string, unknown> & { version: 'v3' },
  ): Promise<AsyncIterable<GraphProtocolEvent>>;
  getState(
    config: { configurable: Record<string, unknown> },
    options?: { subgraphs?: boolean },
  ): Promise<StateSnapshotLike>;
  /** Past states, newest first (LangGraph's `getStateHistory`, over the checkpointer's `list`). */
  getStateHistory(
    config: { configurable: Record<string, unknown> },
    options?: { limit?: number; before?: { configurable: Record<string, unknown> }; filter?: Record<string, unknown> },
  ): AsyncIterable<StateSnapshotLike>;
  updateState(
    config: { configurable: Record<string, unknown> },
    values: unknown,
    asNode?: string,
  ): Promise<{ configurable?: Record<string, unknown> }>;
  /** The drawable graph (nodes and edges); `xray` expands subgraphs. */
  getGraphAsync(config: {
    configurable?: Record<string, unknown>;
    xray?: boolean | number;
  }): Promise<{ toJSON(): Record<string, unknown> }>;
  checkpointer?: unknown;
  store?: unknown;
}

/** The interrupts a state waits on, by task id, as plain JSON (a thread record's `interrupts`). */
export function interruptsOf(state: StateSnapshotLike | null): Record<string, unknown[]> {
  const interrupts: Record<string, unknown[]> = {};
  for (const task of state?.tasks ?? [])
    if (task.interrupts && task.interrupts.length > 0) interrupts[task.id] = toPlain<unknown[]>(task.interrupts);
  return interrupts;
}

export interface GraphRegistry {
  readonly names: readonly string[];
  has(name: string): boolean;
  /** The graph to run `name` with `config` (a factory is called with it). */
  get(name: string, config?: Record<string, unknown>): Promise<RunnableGraph>;
}

type GraphSource = RunnableGraph | ((config: Record<string, unknown>) => unknown);

export async function loadGraphs(
  config: AppConfig,
  checkpointer: BaseCheckpointSaver,
  items: BaseStore,
): Promise<GraphRegistry> {
  checkpointer = withRunMetadata(checkpointer); // each run's metadata goes into its checkpoints' metadata
  const sources = new Map<string, GraphSource>();
  for (const [name, ref] of config.graphs) {
    const where = `${config.configFile}: graphs.${name}`;
    const value = await importExport(ref, where);
    if (typeof value === 'function' && !isGraph(value))
      sources.set(name, value as (config: Record<string, unknown>) => unknown);
    else sources.set(name, prepare(await value, checkpointer, items, `graphs.${name}`));
  }
  return {
    names: [...sources.keys()],
    has: (name) => sources.has(name),
    async get(name, runConfig = {}) {
      const source = sources.get(name);
      if (source === undefined) throw new Error(`unknown graph ${name}`);
      if (typeof source !== 'function') return source;
      return prepare(await source(runConfig), checkpointer, items, `graphs.${name}`, ' (returned by its factory)');
    },
  };
}

function prepare(
  value: unknown,
  checkpointer: BaseCheckpointSaver,
  items: BaseStore,
  key: string,
  from = '',
): RunnableGraph {
  let graph = value;
  if (!isGraph(graph) && hasFunction(graph, 'compile')) graph = (graph as { compile(): unknown }).compile();
  const inner = (graph as { graph?: unknown } | null)?.graph;
  if (isGraph(graph) && isGraph(inner) && 'builder' in (inner as object)) graph = inner;
  if (!isGraph(graph)) {
    throw new GraphLoadError(
      key,
      `not a LangGraph graph${from} (expected a compiled StateGraph, a StateGraph or a function returning one)`,
    );
  }
  // The server owns persistence, as on the hosted platform: a graph compiled with its own checkpointer still runs on
  // this one.
  graph.checkpointer = checkpointer;
  graph.store = items;
  return graph;
}

function isGraph(v: unknown): v is RunnableGraph {
  return hasFunction(v, 'stream') && hasFunction(v, 'getState');
}

function hasFunction(v: unknown, name: string): boolean {
  return (
    (typeof v === 'object' || typeof v === 'function') &&
    v !== null &&
    typeof (v as Record<string, unknown>)[name] === 'function'
  );
}
