import type { Assistant, Run, Thread } from './types.ts';

/**
 * Where assistants, threads and runs live. Records go in and come out as
 * plain JSON (no shared references), so an implementation may keep them
 * anywhere; filtering and paging are done by the caller over `list*`.
 * Graph state itself lives in the LangGraph checkpointer, not here.
 */
export interface AgentStore {
  readonly kind: 'memory' | 'redis';
  getAssistant(id: string): Promise<Assistant | null>;
  putAssistant(assistant: Assistant): Promise<void>;
  listAssistants(): Promise<Assistant[]>;
  deleteAssistant(id: string): Promise<void>;
  getThread(id: string): Promise<Thread | null>;
  putThread(thread: Thread): Promise<void>;
  /** Deletes the thread and its runs. */
  deleteThread(id: string): Promise<void>;
  listThreads(): Promise<Thread[]>;
  getRun(id: string): Promise<Run | null>;
  putRun(run: Run): Promise<void>;
  deleteRun(id: string): Promise<void>;
  /** Runs of a thread, oldest first. */
  listRuns(threadId: string): Promise<Run[]>;
  close(): Promise<void>;
}
