import type { Assistant, AssistantVersion, Cron, Run, Thread } from './records.ts';

/**
 * Where assistants, threads, runs and crons live. Records go in and come out as
 * plain JSON (no shared references), so an implementation may keep them
 * anywhere; filtering and paging are done by the caller over `list*`.
 * Graph state itself lives in the LangGraph checkpointer, not here.
 */
export interface AgentStore {
  readonly kind: 'memory' | 'redis' | 'postgres';
  getAssistant(id: string): Promise<Assistant | null>;
  /** Stores the assistant, and it as its version `assistant.version`. */
  putAssistant(assistant: Assistant): Promise<void>;
  listAssistants(): Promise<Assistant[]>;
  /** Every version of the assistant that was put, in any order. */
  listAssistantVersions(id: string): Promise<AssistantVersion[]>;
  /** Deletes the assistant and its versions. */
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
  getCron(id: string): Promise<Cron | null>;
  putCron(cron: Cron): Promise<void>;
  listCrons(): Promise<Cron[]>;
  deleteCron(id: string): Promise<void>;
  /**
   * True for the first caller only, per `key`, for `ms`: one server of
   * several behind the same store fires a cron at a given time.
   */
  claim(key: string, ms: number): Promise<boolean>;
  /** Holds `key` for `ms` from now (again and again, to keep it): how a server shows it is still running a run. */
  lease(key: string, ms: number): Promise<void>;
  /** Whether `key` is held (claimed or leased, and not expired). */
  held(key: string): Promise<boolean>;
  close(): Promise<void>;
}
