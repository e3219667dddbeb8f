/**
 * Records of the Agent Server, in the public wire shape (snake_case, ISO
 * timestamps, plain JSON values) so a store keeps exactly what the API answers.
 */
export type Json = Record<string, unknown>;

export interface Assistant {
  readonly assistant_id: string;
  readonly graph_id: string;
  readonly config: Json;
  readonly context: Json;
  readonly metadata: Json;
  readonly name: string;
  readonly description: string | null;
  readonly version: number;
  readonly created_at: string;
  readonly updated_at: string;
}

/** An assistant as it was at one of its versions (what `assistants.getVersions` lists). */
export type AssistantVersion = Omit<Assistant, 'updated_at'>;

export const THREAD_STATUSES = ['idle', 'busy', 'interrupted', 'error'] as const;
export type ThreadStatus = (typeof THREAD_STATUSES)[number];

export interface Thread {
  readonly thread_id: string;
  readonly created_at: string;
  readonly updated_at: string;
  readonly metadata: Json;
  readonly status: ThreadStatus;
  /** The graph state after the last run; null before the first. */
  readonly values: Json | null;
  readonly config: Json;
  readonly interrupts: Record<string, unknown[]>;
  /**
   * When its state last changed (a run's end, a state update, supersteps); its creation time before that. Absent on
   * threads stored before the field existed.
   */
  readonly state_updated_at?: string;
  /** Set by `ttl` on create or update: the thread is deleted once `expires_at` passes (ttl-sweeper.ts). */
  readonly ttl?: ThreadTtl;
}

/** A thread's TTL as the official server shows it (`GET /threads/{id}?include=ttl`). */
export interface ThreadTtl {
  readonly strategy: 'delete';
  readonly ttl_minutes: number;
  readonly expires_at: string;
}

export const RUN_STATUSES = ['pending', 'running', 'success', 'error', 'timeout', 'interrupted'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export const MULTITASK_STRATEGIES = ['reject', 'interrupt', 'rollback', 'enqueue'] as const;
export type MultitaskStrategy = (typeof MULTITASK_STRATEGIES)[number];

export interface Run {
  readonly run_id: string;
  /** For a threadless run, the temporary thread it ran on (deleted afterwards). */
  readonly thread_id: string;
  readonly assistant_id: string;
  readonly created_at: string;
  readonly updated_at: string;
  readonly status: RunStatus;
  readonly metadata: Json;
  /** The run request as given (without the user object, which never reaches storage). */
  readonly kwargs: Json;
  readonly multitask_strategy: MultitaskStrategy;
}

/**
 * A schedule of runs: `payload` (a run body) starts on `assistant_id` at each `next_run_date`, on its thread or
 * threadless.
 */
export interface Cron {
  readonly cron_id: string;
  readonly assistant_id: string;
  /** The thread each run goes to; null: a new thread per run (threadless). */
  readonly thread_id: string | null;
  /** The identity of the user who created it (its runs run as that user). */
  readonly user_id: string | null;
  /** Cron format in UTC (five fields, or six with seconds first). */
  readonly schedule: string;
  readonly payload: Json;
  /** When it runs next; null once it has ended. */
  readonly next_run_date: string | null;
  readonly end_time: string | null;
  /** The IANA timezone its schedule is read in; null (or absent, for crons made before it existed): UTC. */
  readonly timezone?: string | null;
  readonly metadata: Json;
  readonly enabled: boolean;
  /** Threadless: what becomes of each run's thread ('delete' by default). */
  readonly on_run_completed: 'delete' | 'keep';
  readonly created_at: string;
  readonly updated_at: string;
  /**
   * Who its runs run as: the creator's identity, display name and permissions (no other field of the user is kept;
   * never answered).
   */
  readonly run_as: {
    readonly identity: string;
    readonly display_name: string;
    readonly permissions: readonly string[];
  };
}
