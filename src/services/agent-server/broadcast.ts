import { Channel } from './channel.ts';

/**
 * One run's events for every reader: the response that started the run and
 * any client that joins it later (`GET .../runs/{run_id}/stream`). Each
 * reader is a Channel of its own that gets what is pushed from the moment
 * it subscribed; a reader that leaves (detaches) is dropped, and a reader
 * subscribing after the end gets an empty, closed channel.
 */
export class Broadcast<T> {
  private readonly readers = new Set<Channel<T>>();
  private closed = false;

  subscribe(): Channel<T> {
    const reader = new Channel<T>();
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
    for (const reader of this.readers) reader.push(item);
  }

  close(): void {
    this.closed = true;
    for (const reader of this.readers) reader.close();
    this.readers.clear();
  }
}
