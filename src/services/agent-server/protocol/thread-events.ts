import type { Event as ProtocolEvent, Namespace } from '@langchain/protocol';
import { inferChannel, isPrefixMatch } from '@langchain/langgraph/stream';

/** What a reader of a thread's events asks for: `POST .../stream/events`'s body, or `subscription.subscribe`'s. */
export interface EventFilter {
  readonly channels: ReadonlySet<string>;
  readonly namespaces?: readonly Namespace[] | undefined;
  readonly depth?: number | undefined;
}

/** Whether `event` is on a channel of `filter` and under one of its namespaces (at most `depth` below it). */
export function matchesFilter(filter: EventFilter, event: ProtocolEvent): boolean {
  const channel = inferChannel(event);
  if (channel === undefined) return false;
  if (!filter.channels.has(channel) && !(channel.startsWith('custom:') && filter.channels.has('custom'))) return false;
  if (filter.namespaces === undefined || filter.namespaces.length === 0) return true;
  const ns = event.params.namespace;
  return filter.namespaces.some(
    (prefix) =>
      isPrefixMatch(ns, [...prefix]) && (filter.depth === undefined || ns.length - prefix.length <= filter.depth),
  );
}

/** Where a reader's events go; it must not throw (a closed connection drops them). */
export type EventSink = (event: ProtocolEvent) => void;
/** Why a reader's stream ends: its thread was deleted, or (a reader that came early) the thread is not theirs. */
export type EndReason = 'deleted' | 'refused';
/** Where a reader stands (readerState). */
export type ReaderState = 'reading' | 'waiting' | 'gone';
/** Which events a reader wants. */
export type EventMatch = (event: ProtocolEvent) => boolean;

/** The events of `filter`. */
export const matching =
  (filter: EventFilter): EventMatch =>
  (event) =>
    matchesFilter(filter, event);

/** Events of the current run held for readers that come late or come back (`since`); beyond, the oldest go. */
const HELD_EVENTS = 20_000;

/**
 * One thread's protocol events, in this process: numbered (`seq`, and `event_id` its text), the current run's held
 * for replay, and handed to every reader whose filter matches. Delivery is synchronous: a reader is attached by
 * replaying what is held and then joining the live readers in the same tick, so it misses nothing and gets nothing
 * twice (a reconnect that says `since` gets only what came after).
 *
 * `seq` starts from the clock (microseconds since the epoch), so numbers stay increasing when a thread's log is made
 * again (after a restart, or once dropped): a client that deduplicates by `event_id` never drops a new event.
 */
export class ThreadEvents {
  private seq = Date.now() * 1000;
  private held: ProtocolEvent[] = [];
  private readonly readers = new Map<
    EventSink,
    { match: EventMatch; onEnd: (reason: EndReason) => void; waiting: boolean }
  >();
  /** When the last reader left or the last event came: an idle log can be dropped (threads.ts). */
  lastActive = Date.now();
  /** When a reader last came (an event stream, a WebSocket subscription): see settled. */
  private lastAttach = 0;

  get readerCount(): number {
    return this.readers.size;
  }

  /** The seq of the last event (what a `since` means "everything so far"). */
  get lastSeq(): number {
    return this.seq;
  }

  /** A new run begins: the previous run's events are no longer replayed to new readers. */
  newRun(): void {
    this.held = [];
  }

  /** Numbers `event` and hands it to the readers that want it. */
  append(method: string, namespace: Namespace, data: unknown, node?: string): ProtocolEvent {
    this.seq += 1;
    this.lastActive = Date.now();
    const event = {
      type: 'event',
      event_id: String(this.seq),
      seq: this.seq,
      method,
      params: { namespace, timestamp: Date.now(), ...(node !== undefined ? { node } : {}), data },
    } as ProtocolEvent;
    this.held.push(event);
    if (this.held.length > HELD_EVENTS) this.held.splice(0, this.held.length - HELD_EVENTS);
    for (const [sink, { match, waiting }] of this.readers) if (!waiting && match(event)) sink(event);
    return event;
  }

  /** The held events `match` wants, after `since` (all held without). */
  replay(match: EventMatch, since?: number): ProtocolEvent[] {
    return this.held.filter((event) => (since === undefined || (event.seq ?? 0) > since) && match(event));
  }

  /**
   * From now on, every event `match` wants goes to `sink` (replay first, in the same tick, to miss nothing), until the
   * reader leaves (detach) or the thread is deleted (`onEnd`). A `waiting` reader (one that came before its thread
   * existed: early-readers.ts) gets nothing until it is admitted, or is ended if refused.
   */
  follow(sink: EventSink, match: EventMatch, onEnd: (reason: EndReason) => void, waiting = false): void {
    this.readers.set(sink, { match, onEnd, waiting });
    this.touch();
  }

  /** Whether `sink` reads the thread, still waits to be admitted, or is no reader (left, refused, ended). */
  readerState(sink: EventSink): ReaderState {
    const reader = this.readers.get(sink);
    return reader === undefined ? 'gone' : reader.waiting ? 'waiting' : 'reading';
  }

  /**
   * A waiting reader may read the thread: it gets the held events it wants (those of the run that made the thread),
   * then the live ones, in the same tick (nothing missed, nothing twice).
   */
  admit(sink: EventSink): void {
    const reader = this.readers.get(sink);
    if (reader === undefined || !reader.waiting) return;
    for (const event of this.held) if (reader.match(event)) sink(event);
    reader.waiting = false;
  }

  /** A waiting reader may not read the thread: its stream ends, having delivered nothing. */
  refuse(sink: EventSink): void {
    const reader = this.readers.get(sink);
    if (reader === undefined || !reader.waiting) return;
    this.readers.delete(sink);
    reader.onEnd('refused');
  }

  /** The thread was deleted: nothing more is held or replayed, and every reader is ended. */
  end(): void {
    this.held = [];
    const readers = [...this.readers.values()];
    this.readers.clear();
    for (const { onEnd } of readers) onEnd('deleted');
  }

  /** A reader came or widened what it reads (a WebSocket subscription). */
  touch(): void {
    this.lastAttach = Date.now();
  }

  /**
   * Resolves once the thread's readers have settled: someone reads (or came since the call) and nobody came for
   * `quietMs`; at the latest after `maxMs`. A protocol run begins then (run-commands.ts says why).
   */
  async settled(quietMs: number, maxMs: number): Promise<void> {
    const begun = Date.now();
    while (Date.now() - begun < maxMs) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      const someone = this.readers.size > 0 || this.lastAttach >= begun;
      if (someone && Date.now() - Math.max(this.lastAttach, begun) >= quietMs) return;
    }
  }

  detach(sink: EventSink): void {
    this.readers.delete(sink);
    this.lastActive = Date.now();
  }
}
