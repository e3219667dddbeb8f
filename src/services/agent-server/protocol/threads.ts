import type { RequestAuth } from '../auth/authenticate.ts';
import { AgentTree } from './agent-tree.ts';
import { ThreadEvents, type EventSink } from './thread-events.ts';

/** A thread as the protocol sees it in this process: its events, its current run and that run's agent tree. */
export interface ProtocolThread {
  readonly threadId: string;
  readonly events: ThreadEvents;
  readonly tree: AgentTree;
  /** The run the protocol started last on the thread (its events are the ones held). */
  currentRunId?: string;
  /** The assistant of that run: `input.respond` resumes with it. */
  assistantId?: string;
  /** Runs being followed (their frames turned into events): a thread with one is never dropped. */
  following: number;
  /** Readers that came before the thread existed, with who they are: admitted or refused once it does. */
  readonly early: Map<EventSink, RequestAuth>;
}

/** Threads kept; beyond, the ones idle longest (no reader, no run followed) are dropped first. */
const MAX_THREADS = 5_000;

/**
 * The threads the protocol serves in this process, made on first use (a command or a reader). What a thread keeps
 * is bounded (thread-events.ts), and so is their number: an idle thread's events can be made again later from
 * nothing (its state stays in the checkpointer; only the replay of its last run is lost).
 */
export class ProtocolThreads {
  private readonly threads = new Map<string, ProtocolThread>();

  get(threadId: string): ProtocolThread {
    let thread = this.threads.get(threadId);
    if (thread === undefined) {
      this.prune();
      thread = { threadId, events: new ThreadEvents(), tree: new AgentTree(), following: 0, early: new Map() };
      this.threads.set(threadId, thread);
    }
    return thread;
  }

  /**
   * The thread was deleted: its events go too, and its readers' streams end (a thread made again with the same id
   * starts with nothing to replay).
   */
  drop(threadId: string): void {
    this.threads.get(threadId)?.events.end();
    this.threads.delete(threadId);
  }

  private prune(): void {
    if (this.threads.size < MAX_THREADS) return;
    const idle = [...this.threads.values()]
      .filter((t) => t.following === 0 && t.events.readerCount === 0)
      .sort((a, b) => a.events.lastActive - b.events.lastActive);
    for (const t of idle.slice(0, Math.max(1, idle.length >> 2))) this.threads.delete(t.threadId);
  }
}
