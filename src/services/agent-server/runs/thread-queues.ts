import type { RunHandle } from './run-handle.ts';

/** Per thread: the active run, then the queued ones (threadless runs queue nowhere). */
export class ThreadQueues {
  private readonly queues = new Map<string, RunHandle[]>();

  /** True while a run is active or queued on the thread. */
  busy(threadId: string): boolean {
    return (this.queues.get(threadId)?.length ?? 0) > 0;
  }

  /** The thread's active run and the runs queued behind it. */
  onThread(threadId: string): RunHandle[] {
    return [...(this.queues.get(threadId) ?? [])];
  }

  /** Queues `handle` behind the thread's runs. */
  add(threadId: string, handle: RunHandle): void {
    this.queues.set(threadId, [...(this.queues.get(threadId) ?? []), handle]);
  }

  /** `handle` has finished: the runs behind it move up. */
  remove(threadId: string, handle: RunHandle): void {
    const left = (this.queues.get(threadId) ?? []).filter((h) => h !== handle);
    if (left.length > 0) this.queues.set(threadId, left);
    else this.queues.delete(threadId);
  }

  /** Another run than `runId` is active or queued on the thread. */
  busyAfter(threadId: string, runId: string): boolean {
    return (this.queues.get(threadId) ?? []).some((h) => h.runId !== runId);
  }
}
