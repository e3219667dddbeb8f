/**
 * A bounded memo of recently used entries, in two generations of at most
 * `size` entries each: when the young one fills, it becomes the old one and
 * the previous old one is dropped, so memory stays bounded and entries in use
 * survive (a hit in the old generation is copied forward). No per-entry
 * bookkeeping: a hit is one Map lookup.
 */
export class RecentlyUsed<K, V> {
  private young = new Map<K, V>();
  private old = new Map<K, V>();

  constructor(private readonly size: number) {}

  get(key: K): V | undefined {
    const v = this.young.get(key);
    if (v !== undefined) return v;
    const aged = this.old.get(key);
    if (aged !== undefined) this.set(key, aged);
    return aged;
  }

  set(key: K, value: V): void {
    if (this.young.size >= this.size) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(key, value);
  }
}
