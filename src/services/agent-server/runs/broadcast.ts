import { Channel } from './channel.ts';

/** How much of its past a Broadcast keeps for readers that resume: the last items within every bound. */
export interface HeldBounds<T> {
  readonly items: number;
  readonly weight: number;
  /** An item's share of `weight` (e.g. its size in bytes). */
  weigh(item: T): number;
  /**
   * Weight shared by several broadcasts: together they hold at most `limit` (each drops its own oldest items to stay
   * within).
   */
  readonly pool?: { used: number; readonly limit: number };
}

/**
 * One run's events for every reader: the response that started the run and
 * any client that joins it later (`GET .../runs/{run_id}/stream`). Each
 * reader is a Channel of its own. A reader starts from now, or resumes:
 * it first gets the held items after the first `seen` ever pushed, then
 * what comes. A reader that leaves (detaches) is dropped; once the
 * broadcast is closed, a reader gets the held items it asked for and ends.
 *
 * The last items are held within `bounds`, so a client that lost its
 * connection can come back without losing events, as long as what it
 * missed is still held.
 */
export class Broadcast<T> {
  private readonly readers = new Set<Channel<T>>();
  /** Held items are `held[start..]` (dropped ones are cut off in bulk, not one shift at a time). */
  private held: (T | undefined)[] = [];
  private start = 0;
  private heldWeight = 0;
  private pushed = 0;
  private closed = false;

  constructor(private readonly bounds: HeldBounds<T>) {}

  /** Items pushed so far: the next item is number `count + 1`. */
  get count(): number {
    return this.pushed;
  }

  /** Total weight of the held items. */
  get weight(): number {
    return this.heldWeight;
  }

  /** A reader from now (`seen` undefined), or of everything after the first `seen` items that is still held. */
  subscribe(seen?: number): Channel<T> {
    const reader = new Channel<T>();
    if (seen !== undefined) {
      const first = this.pushed - (this.held.length - this.start); // items pushed before the oldest held one
      for (let i = Math.max(seen, first); i < this.pushed; i++) reader.push(this.held[this.start + i - first]!);
    }
    if (this.closed) reader.close();
    else this.readers.add(reader);
    return reader;
  }

  /** The reader is gone: drop what it has queued and stop feeding it. */
  leave(reader: Channel<T>): void {
    reader.detach();
    this.readers.delete(reader);
  }

  push(item: T): void {
    const { items, weight, weigh, pool } = this.bounds;
    this.pushed++;
    this.held.push(item);
    this.addWeight(weigh(item));
    const over = () => this.heldWeight > weight || (pool !== undefined && pool.used > pool.limit);
    while (this.held.length - this.start > items || (over() && this.held.length - this.start > 1)) {
      this.addWeight(-weigh(this.held[this.start]!));
      this.held[this.start++] = undefined; // let it go now, not at the next compaction
    }
    if (this.start > 1024 && this.start * 2 > this.held.length) {
      this.held = this.held.slice(this.start);
      this.start = 0;
    }
    for (const reader of this.readers) reader.push(item);
  }

  close(): void {
    this.closed = true;
    for (const reader of this.readers) reader.close();
    this.readers.clear();
  }

  /** Lets go of the slots of dropped items now (a finished run's held items stay a while; its slots need not). */
  compact(): void {
    if (this.start === 0) return;
    this.held = this.held.slice(this.start);
    this.start = 0;
  }

  /** Drops every held item (and gives its weight back to the pool): later readers resume from nothing. */
  release(): void {
    this.addWeight(-this.heldWeight);
    this.held = [];
    this.start = 0;
  }

  private addWeight(w: number): void {
    this.heldWeight += w;
    if (this.bounds.pool) this.bounds.pool.used += w;
  }
}
