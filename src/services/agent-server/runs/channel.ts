/**
 * An unbounded async queue with one reader: the run pushes, the response
 * reads. Once the reader detaches (its client went away and the run goes
 * on), pushes are dropped instead of piling up.
 */
export class Channel<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private wake: (() => void) | null = null;
  private closed = false;
  private detached = false;

  push(item: T): void {
    if (this.closed || this.detached) return;
    this.items.push(item);
    this.signal();
  }

  close(): void {
    this.closed = true;
    this.signal();
  }

  /** The reader is gone: drop what is queued and whatever comes. */
  detach(): void {
    this.detached = true;
    this.items.length = 0;
    this.signal();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      if (this.detached) return;
      const item = this.items.shift();
      if (item !== undefined) {
        yield item;
        continue;
      }
      if (this.closed) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private signal(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}
