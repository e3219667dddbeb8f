import type { StreamMode } from './stream-modes.ts';
import { isMessageChunkLike, isMessageLike, type MessageLike } from './message-like.ts';
import { jsonText } from '../serialize.ts';

/**
 * Graph stream chunks → the run stream's events, named and shaped as the official Agent Server sends them. `data` is
 * JSON text, serialised the moment the chunk arrives (so later changes to graph objects cannot alter what was
 * streamed).
 *
 * - `values` / `updates` / `custom`: one event per chunk, named after the mode.
 * - `debug`, `tasks`, `checkpoints`: LangGraph's own payloads, with each config's checkpoint as `checkpoint` (and
 *   `parent_checkpoint`, `parent_config`), a subgraph task's config as its `checkpoint`, and no internal config keys
 *   (`__...`, callbacks, the authenticated user).
 * - `messages-tuple`: `event: messages`, `data: [chunk, metadata]`.
 * - `messages`: `messages/metadata` when a streamed message starts, then `messages/partial` with the message
 *   accumulated so far after each token; after each state of the root graph (its `values`, sent first),
 *   `messages/complete` with the messages of the state not completed before (input and tool messages too, as the
 *   official server does).
 * - `events`: each LangChain callback event (`streamEvents` v2) as `event: events` (see eventFrame).
 * With `stream_subgraphs`, events of a subgraph carry `|<namespace>` after the name (`updates|child:<task id>`);
 * `messages/*` events do not.
 */
export interface Frame {
  readonly event: string;
  /** JSON text. */
  readonly data: string;
  /**
   * The SSE `id`: the frame's number in its run (or in its thread's stream), from 0, what a client resumes from
   * (`Last-Event-ID`).
   */
  readonly id?: string;
}

export const frame = (event: string, data: unknown): Frame => ({ event, data: jsonText(data) });

/**
 * The graph's own stream modes that produce the events of `modes` (`values` is always read: the server needs the
 * state, and `messages` completes messages from it).
 */
export function graphStreamModes(modes: readonly StreamMode[]): string[] {
  const out = new Set(['values']);
  for (const m of modes) {
    if (m === 'events') continue;
    out.add(m === 'messages-tuple' ? 'messages' : m);
  }
  return [...out];
}

/**
 * Whether the graph must stream its subgraphs' chunks: when the run asks for them, and for `messages`, whose tokens
 * come from every chat model of the run, in subgraphs too, as with the official server.
 */
export function graphSubgraphs(modes: readonly StreamMode[], subgraphs: boolean): boolean {
  return subgraphs || modes.includes('messages');
}

/** The stream mode an event belongs to; null for `metadata` and `error`, which every reader gets. */
export function modeOfEvent(event: string): StreamMode | null {
  const base = event.split('|')[0]!;
  if (base === 'metadata' || base === 'error') return null;
  if (base.startsWith('messages/')) return 'messages';
  return base === 'messages' ? 'messages-tuple' : (base as StreamMode);
}

/** The frames of `modes` only (plus `metadata` and `error`). */
export async function* onlyModes(frames: AsyncIterable<Frame>, modes: readonly StreamMode[]): AsyncGenerator<Frame> {
  const wanted = new Set(modes);
  for await (const f of frames) {
    const mode = modeOfEvent(f.event);
    if (mode === null || wanted.has(mode)) yield f;
  }
}

/**
 * A chunk of `graph.stream(..., {streamMode: [...]})`, `[mode, payload]` or `[namespace, mode, payload]`, as its three
 * parts.
 */
function chunkParts(chunk: unknown): [string[], string, unknown] | null {
  if (!Array.isArray(chunk)) return null;
  if (chunk.length === 2) return [[], chunk[0] as string, chunk[1]];
  if (chunk.length >= 3) return [(chunk[0] as string[] | null) ?? [], chunk[1] as string, chunk[2]];
  return null;
}

/** The whole state after a step, when `chunk` is the root graph's `values` chunk; undefined otherwise. */
export function rootValues(chunk: unknown): unknown {
  const parts = chunkParts(chunk);
  return parts !== null && parts[1] === 'values' && parts[0].length === 0 ? parts[2] : undefined;
}

/**
 * An event of `graph.streamEvents(..., {version: 'v2'})` as the `events` mode sends it; null for the events the server
 * reads itself (the root graph's stream chunks) and hidden ones.
 */
export function eventFrame(event: { event?: string; run_id?: string; tags?: string[] }, rootRunId: string) {
  if (event.tags?.includes('langsmith:hidden')) return null;
  if (event.event === 'on_chain_stream' && event.run_id === rootRunId) return null;
  try {
    return frame('events', event);
  } catch {
    return null; // an event whose data cannot be written as JSON (a cycle) is left out, not the run
  }
}

export class FrameMapper {
  /** Messages being streamed, accumulated, by id. */
  private readonly partials = new Map<string, MessageLike>();
  private readonly completed = new Set<string>();
  /** The last `values` chunk of the root graph. */
  lastValues: unknown = undefined;

  /**
   * `subgraphs`: the run asked for subgraph events (`stream_subgraphs`). Without, the graph may still stream its
   * subgraphs' chunks (see graphSubgraphs): only their chat models' tokens are kept, for `messages`.
   */
  constructor(
    private readonly modes: ReadonlySet<StreamMode>,
    private readonly subgraphs = false,
  ) {}

  /** The events of one chunk of `graph.stream(..., {streamMode: [...]})`. */
  map(chunk: unknown): Frame[] {
    const parts = chunkParts(chunk);
    if (parts === null) return [];
    const [ns, mode, payload] = parts;
    if (ns.length > 0 && !this.subgraphs) {
      if (mode !== 'messages' || !this.modes.has('messages')) return [];
      const [message, metadata] = payload as [MessageLike, Record<string, unknown>];
      return this.partial(message, metadata);
    }
    const name = (event: string) => (ns.length === 0 ? event : `${event}|${ns.join('|')}`);
    const out: Frame[] = [];
    switch (mode) {
      case 'values':
        if (ns.length === 0) this.lastValues = payload;
        if (this.modes.has('values')) out.push(frame(name('values'), payload));
        if (this.modes.has('messages') && ns.length === 0) out.push(...this.complete(payload));
        break;
      case 'messages': {
        const [message, metadata] = payload as [MessageLike, Record<string, unknown>];
        if (this.modes.has('messages-tuple')) out.push(frame(name('messages'), [message, metadata]));
        if (this.modes.has('messages')) out.push(...this.partial(message, metadata));
        break;
      }
      case 'debug':
        if (this.modes.has('debug')) out.push(frame(name('debug'), debugPayload(payload)));
        break;
      case 'checkpoints':
        if (this.modes.has('checkpoints')) out.push(frame(name('checkpoints'), checkpointPayload(payload)));
        break;
      case 'tasks':
        if (this.modes.has('tasks')) out.push(frame(name('tasks'), taskPayload(payload)));
        break;
      default:
        if (this.modes.has(mode as StreamMode)) out.push(frame(name(mode), payload));
    }
    return out;
  }

  /** A token of a message a chat model streams (whole messages come complete with the state). */
  private partial(message: MessageLike, metadata: Record<string, unknown>): Frame[] {
    if (!isMessageChunkLike(message) || !message.id) return [];
    const previous = this.partials.get(message.id);
    const out: Frame[] = [];
    if (previous === undefined) out.push(frame('messages/metadata', { [message.id]: { metadata } }));
    const accumulated = previous?.concat ? previous.concat(message) : message;
    this.partials.set(message.id, accumulated);
    out.push(frame('messages/partial', [accumulated]));
    return out;
  }

  /** The messages of a root state not completed before, as one `messages/complete`. */
  private complete(values: unknown): Frame[] {
    if (typeof values !== 'object' || values === null || isMessageLike(values) || !('messages' in values)) return [];
    const listed = values.messages;
    const fresh: unknown[] = [];
    for (const m of Array.isArray(listed) ? listed : [listed]) {
      const id = (m as { id?: unknown } | null)?.id;
      if (typeof id !== 'string' || id === '' || this.completed.has(id)) continue;
      this.completed.add(id);
      this.partials.delete(id);
      fresh.push(m);
    }
    return fresh.length > 0 ? [frame('messages/complete', fresh)] : [];
  }
}

type Config = { configurable?: Record<string, unknown>; [key: string]: unknown };

const isConfig = (v: unknown): v is Config =>
  typeof v === 'object' &&
  v !== null &&
  typeof (v as Config).configurable === 'object' &&
  (v as Config).configurable !== null;

/** Keys of a streamed config the client must not see: LangGraph's internals and the authenticated user. */
const HIDDEN_CONFIGURABLE = new Set(['langgraph_auth_user', 'service_auth_user', 'langgraph_auth_permissions']);

function publicConfig(config: unknown): unknown {
  if (!isConfig(config)) return config;
  const { callbacks: _callbacks, ...rest } = config;
  const configurable = Object.fromEntries(
    Object.entries(config.configurable!).filter(([k]) => !k.startsWith('__') && !HIDDEN_CONFIGURABLE.has(k)),
  );
  return { ...rest, configurable };
}

/** The checkpoint a config names (`{thread_id, checkpoint_ns, checkpoint_id, checkpoint_map}`), or null. */
export function checkpointOfConfig(config: unknown, idRequired = true): Record<string, unknown> | null {
  if (!isConfig(config)) return null;
  const c = config.configurable!;
  if (typeof c.thread_id !== 'string' || c.thread_id === '') return null;
  if (idRequired && typeof c.checkpoint_id !== 'string') return null;
  return {
    thread_id: c.thread_id,
    checkpoint_ns: typeof c.checkpoint_ns === 'string' ? c.checkpoint_ns : '',
    checkpoint_id: typeof c.checkpoint_id === 'string' ? c.checkpoint_id : null,
    checkpoint_map: typeof c.checkpoint_map === 'object' && c.checkpoint_map !== null ? c.checkpoint_map : null,
  };
}

/** A task of `tasks` / `debug` / a checkpoint: a subgraph task's config becomes its `checkpoint`. */
function taskPayload(task: unknown): unknown {
  if (typeof task !== 'object' || task === null) return task;
  const { state, ...rest } = task as { state?: unknown };
  const checkpoint = checkpointOfConfig(state, false);
  return checkpoint === null ? task : { ...rest, checkpoint };
}

function checkpointPayload(payload: unknown): unknown {
  if (typeof payload !== 'object' || payload === null) return payload;
  const { parentConfig, tasks, config, ...rest } = payload as {
    parentConfig?: unknown;
    config?: unknown;
    tasks?: unknown;
  };
  return {
    ...rest,
    config: publicConfig(config),
    parent_config: publicConfig(parentConfig),
    checkpoint: checkpointOfConfig(config),
    parent_checkpoint: checkpointOfConfig(parentConfig),
    tasks: Array.isArray(tasks) ? tasks.map(taskPayload) : tasks,
  };
}

function debugPayload(chunk: unknown): unknown {
  if (typeof chunk !== 'object' || chunk === null) return chunk;
  const c = chunk as { type?: string; payload?: unknown };
  if (c.type === 'checkpoint') return { ...c, payload: checkpointPayload(c.payload) };
  if (c.type === 'task_result' || c.type === 'task') return { ...c, payload: taskPayload(c.payload) };
  return chunk;
}
