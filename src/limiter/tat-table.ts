/**
 * A bounded map key → TAT (ms) with least-recently-used order, for the memory
 * limiter.
 *
 * Why not a plain `Map` (whose order could serve as recency via delete+set)?
 * Reaching the oldest entry means iterating from the front, and V8 leaves
 * deleted entries there as holes until the table is rehashed, so a full map
 * that keeps evicting its front walks ever more holes (quadratic: a million
 * inserts past the bound took minutes). Here the recency list is a doubly
 * linked list in typed arrays indexed by slot, and the Map only finds a
 * key's slot: every operation is O(1), and the arrays hold no objects for
 * the garbage collector to trace.
 */
export class TatTable {
  private readonly slots = new Map<string, number>();
  private keys: (string | undefined)[] = [];
  private tats = new Float64Array(0);
  /** Toward the least recently used end. */
  private older = new Int32Array(0);
  /** Toward the most recently used end. */
  private newer = new Int32Array(0);
  private newest = -1;
  private oldest = -1;
  private readonly freed: number[] = [];
  private used = 0;

  constructor(
    readonly maxKeys: number,
    /** Entries inspected at the old end per insert, to drop full buckets (TAT <= now). */
    private readonly sweepStep = 2,
    /** Entries inspected at the old end for a full bucket before evicting the oldest. */
    private readonly evictScan = 16,
  ) {
    this.grow(Math.min(maxKeys, 1024));
  }

  get size(): number {
    return this.slots.size;
  }

  get(key: string): number | undefined {
    const slot = this.slots.get(key);
    return slot === undefined ? undefined : this.tats[slot];
  }

  /** Marks the key as just used, if present. */
  touch(key: string): void {
    const slot = this.slots.get(key);
    if (slot !== undefined) this.moveToNewest(slot);
  }

  /** Stores the key's TAT as the most recently used entry, making room first if it is new. */
  set(key: string, tat: number, now: number): void {
    let slot = this.slots.get(key);
    if (slot === undefined) {
      this.sweep(now);
      if (this.slots.size >= this.maxKeys) this.evict(now);
      slot = this.allocate();
      const own = flatten(key);
      this.keys[slot] = own;
      this.slots.set(own, slot);
      this.link(slot);
    } else {
      this.moveToNewest(slot);
    }
    this.tats[slot] = tat;
  }

  clear(): void {
    this.slots.clear();
    this.keys = [];
    this.freed.length = 0;
    this.used = 0;
    this.newest = this.oldest = -1;
    this.grow(Math.min(this.maxKeys, 1024));
  }

  /** Drops up to `sweepStep` full buckets from the old end; stops at the first one still refilling. */
  private sweep(now: number): void {
    for (let i = 0; i < this.sweepStep && this.oldest !== -1 && this.tats[this.oldest]! <= now; i++) {
      this.remove(this.oldest);
    }
  }

  /** Frees one slot: a full bucket among the oldest few, else the least recently used one. */
  private evict(now: number): void {
    let slot = this.oldest;
    for (let i = 0; i < this.evictScan && slot !== -1; i++, slot = this.newer[slot]!) {
      if (this.tats[slot]! <= now) return this.remove(slot);
    }
    if (this.oldest !== -1) this.remove(this.oldest);
  }

  /** Forgets `key` (an operator's reset): its bucket is full again. */
  delete(key: string): void {
    const slot = this.slots.get(key);
    if (slot !== undefined) this.remove(slot);
  }

  private remove(slot: number): void {
    this.unlink(slot);
    this.slots.delete(this.keys[slot]!);
    this.keys[slot] = undefined;
    this.freed.push(slot);
  }

  private allocate(): number {
    const reused = this.freed.pop();
    if (reused !== undefined) return reused;
    if (this.used === this.tats.length) this.grow(Math.min(this.maxKeys, this.tats.length * 2));
    return this.used++;
  }

  private grow(capacity: number): void {
    const copy = <T extends Float64Array | Int32Array>(from: T, to: T): T => (to.set(from.subarray(0, this.used)), to);
    this.tats = copy(this.tats, new Float64Array(capacity));
    this.older = copy(this.older, new Int32Array(capacity));
    this.newer = copy(this.newer, new Int32Array(capacity));
  }

  private moveToNewest(slot: number): void {
    if (slot === this.newest) return;
    this.unlink(slot);
    this.link(slot);
  }

  private link(slot: number): void {
    this.older[slot] = this.newest;
    this.newer[slot] = -1;
    if (this.newest !== -1) this.newer[this.newest] = slot;
    else this.oldest = slot;
    this.newest = slot;
  }

  private unlink(slot: number): void {
    const older = this.older[slot]!;
    const newer = this.newer[slot]!;
    if (older !== -1) this.newer[older] = newer;
    else this.oldest = newer;
    if (newer !== -1) this.older[newer] = older;
    else this.newest = older;
  }
}

/**
 * A flat copy of a key. Keys built by concatenation are V8 cons strings
 * (a node pointing at the parts); kept as they are, they cost ~64 bytes more
 * per entry than one flat string (measured: 167 vs 103 heap bytes per entry).
 */
function flatten(key: string): string {
  const copy = Buffer.from(key, 'utf8').toString('utf8');
  return copy === key ? copy : key; // a lone surrogate does not survive UTF-8; keep such a key as is
}
