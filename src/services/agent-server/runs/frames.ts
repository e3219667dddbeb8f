import { isBaseMessage, isBaseMessageChunk, type BaseMessage, type BaseMessageChunk } from '@langchain/core/messages';
import type { StreamMode } from './stream-modes.ts';
import { jsonText } from '../serialize.ts';

/**
 * Graph stream chunks → the run stream's events, as the public server
 * names them. `data` is JSON text, serialised the moment the chunk arrives
 * (so later changes to graph objects cannot alter what was streamed).
 *
 * - `values` / `updates` / `custom`: one event per chunk, named after the mode.
 * - `messages-tuple`: `event: messages`, `data: [chunk, metadata]`.
 * - `messages`: `messages/metadata` when a message starts, then
 *   `messages/partial` with the message accumulated so far after each
 *   token, then `messages/complete` with the final message (when its node's
 *   update arrives, or at the end of the run). A message a node returns
 *   whole, without streaming, is `messages/complete` at once.
 * With subgraphs, events of a subgraph carry `|<namespace>` after the name.
 */
export interface Frame {
  readonly event: string;
  /** JSON text. */
  readonly data: string;
  /**
   * The SSE `id`: the frame's number in its run (or in its thread's stream), what a client resumes from
   * (`Last-Event-ID`).
   */
  readonly id?: string;
}

export const frame = (event: string, data: unknown): Frame => ({ event, data: jsonText(data) });

/**
 * The graph's own stream modes that produce the events of `modes` (values and updates are always read: the server needs
 * them).
 */
export function graphStreamModes(modes: readonly StreamMode[]): string[] {
  const out = new Set(['values', 'updates']);
  for (const m of modes) out.add(m === 'messages-tuple' ? 'messages' : m);
  return [...out];
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
  return (chunk.length === 3 ? chunk : [[], ...chunk]) as [string[], string, unknown];
}

/** The whole state after a step, when `chunk` is the root graph's `values` chunk; undefined otherwise. */
export function rootValues(chunk: unknown): unknown {
  const parts = chunkParts(chunk);
  return parts !== null && parts[1] === 'values' && parts[0].length === 0 ? parts[2] : undefined;
}

interface Partial {
  message: BaseMessageChunk;
  readonly node: unknown;
  readonly ns: string;
}

export class FrameMapper {
  private readonly partials = new Map<string, Partial>();
  private readonly started = new Set<string>();
  /** The last `values` chunk of the root graph. */
  lastValues: unknown = undefined;

  constructor(private readonly modes: ReadonlySet<StreamMode>) {}

  /** The events of one chunk of `graph.stream(..., {streamMode: [...]})`. */
  map(chunk: unknown): Frame[] {
    const parts = chunkParts(chunk);
    if (parts === null) return [];
    const [ns, mode, payload] = parts;
    const nsText = ns.join('|');
    const name = (event: string) => (nsText === '' ? event : `${event}|${nsText}`);
    const out: Frame[] = [];
    switch (mode) {
      case 'values':
        if (nsText === '') this.lastValues = payload;
        if (this.modes.has('values')) out.push(frame(name('values'), payload));
        break;
      case 'updates':
        if (this.modes.has('messages')) out.push(...this.completeNodes(payload, nsText, name));
        if (this.modes.has('updates')) out.push(frame(name('updates'), payload));
        break;
      case 'messages': {
        const [message, metadata] = payload as [BaseMessage, Record<string, unknown>];
        if (this.modes.has('messages-tuple')) out.push(frame(name('messages'), [message, metadata]));
        if (this.modes.has('messages')) out.push(...this.message(message, metadata, nsText, name));
        break;
      }
      default:
        if (this.modes.has(mode as StreamMode)) out.push(frame(name(mode), payload));
    }
    return out;
  }

  /** At the end of a run: every message still open, as complete. */
  finish(): Frame[] {
    const out = [...this.partials.values()].map((p) =>
      frame(p.ns === '' ? 'messages/complete' : `messages/complete|${p.ns}`, [p.message]),
    );
    this.partials.clear();
    return out;
  }

  private message(
    message: BaseMessage,
    metadata: Record<string, unknown>,
    ns: string,
    name: (e: string) => string,
  ): Frame[] {
    const id = message.id ?? `message-${this.started.size}`;
    const out: Frame[] = [];
    if (!this.started.has(id)) {
      this.started.add(id);
      out.push(frame(name('messages/metadata'), { [id]: { metadata } }));
    }
    if (isBaseMessageChunk(message)) {
      const previous = this.partials.get(id);
      const accumulated = previous ? previous.message.concat(message) : message;
      this.partials.set(id, { message: accumulated, node: metadata.langgraph_node, ns });
      out.push(frame(name('messages/partial'), [accumulated]));
    } else {
      this.partials.delete(id);
      out.push(frame(name('messages/complete'), [message]));
    }
    return out;
  }

  /**
   * A node's update ends the messages it streamed: complete them, with the node's own final message when it returned
   * one.
   */
  private completeNodes(update: unknown, ns: string, name: (e: string) => string): Frame[] {
    if (typeof update !== 'object' || update === null) return [];
    const out: Frame[] = [];
    for (const [node, value] of Object.entries(update)) {
      const returned = messagesIn(value);
      for (const [id, partial] of this.partials) {
        if (partial.node !== node || partial.ns !== ns) continue;
        this.partials.delete(id);
        out.push(frame(name('messages/complete'), [returned.find((m) => m.id === id) ?? partial.message]));
      }
    }
    return out;
  }
}

/** Messages anywhere one level inside a node's update (`{messages: [...]}` or a lone message). */
function messagesIn(value: unknown): BaseMessage[] {
  if (typeof value !== 'object' || value === null) return [];
  const found: BaseMessage[] = [];
  for (const v of Object.values(value)) {
    if (isBaseMessage(v)) found.push(v);
    else if (Array.isArray(v)) found.push(...v.filter(isBaseMessage));
  }
  return found;
}
