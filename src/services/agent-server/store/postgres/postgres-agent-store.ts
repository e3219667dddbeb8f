import type pg from 'pg';
import type { AgentStore } from '../agent-store.ts';
import type { Assistant, AssistantVersion, Cron, Run, Thread } from '../records.ts';
import { inTransaction } from './pool.ts';

/**
 * The Agent Server's records in PostgreSQL (tables in migrations.ts): each record a JSON document in the row of its
 * id, with the columns it is looked up by (a run's thread and creation time). A put that writes several rows (an
 * assistant and its version) or a delete that removes several (a thread and its runs) is one transaction.
 *
 * Claims and leases are rows of `agent_leases` with an expiry on the database's clock (every server agrees on it):
 * a claim inserts the row, or takes it over once expired, and answers whether it did, in one statement; a lease
 * writes it whatever it held. Expired rows are deleted now and then by `claim`.
 */
export interface PostgresAgentStoreOptions {
  /** Whether `close()` ends the pool (the storage opened from settings owns it; a test sharing one does not). */
  readonly ownsPool?: boolean;
}

/** Claims between two deletions of expired leases. */
const LEASE_SWEEP_EVERY = 100;

export class PostgresAgentStore implements AgentStore {
  readonly kind = 'postgres';
  private readonly ownsPool: boolean;
  private claims = 0;

  constructor(
    private readonly pool: pg.Pool,
    { ownsPool = false }: PostgresAgentStoreOptions = {},
  ) {
    this.ownsPool = ownsPool;
  }

  async getAssistant(id: string): Promise<Assistant | null> {
    return this.one<Assistant>('SELECT data FROM agent_assistants WHERE assistant_id = $1', [id]);
  }

  async putAssistant(assistant: Assistant): Promise<void> {
    const { updated_at: _, ...version } = assistant;
    await inTransaction(this.pool, async (client) => {
      await client.query(
        `INSERT INTO agent_assistants (assistant_id, data) VALUES ($1, $2)
         ON CONFLICT (assistant_id) DO UPDATE SET data = EXCLUDED.data`,
        [assistant.assistant_id, assistant],
      );
      await client.query(
        `INSERT INTO agent_assistant_versions (assistant_id, version, data) VALUES ($1, $2, $3)
         ON CONFLICT (assistant_id, version) DO UPDATE SET data = EXCLUDED.data`,
        [assistant.assistant_id, assistant.version, version],
      );
    });
  }

  async listAssistants(): Promise<Assistant[]> {
    return this.all<Assistant>('SELECT data FROM agent_assistants');
  }

  async listAssistantVersions(id: string): Promise<AssistantVersion[]> {
    return this.all<AssistantVersion>('SELECT data FROM agent_assistant_versions WHERE assistant_id = $1', [id]);
  }

  async deleteAssistant(id: string): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      await client.query('DELETE FROM agent_assistants WHERE assistant_id = $1', [id]);
      await client.query('DELETE FROM agent_assistant_versions WHERE assistant_id = $1', [id]);
    });
  }

  async getThread(id: string): Promise<Thread | null> {
    return this.one<Thread>('SELECT data FROM agent_threads WHERE thread_id = $1', [id]);
  }

  async putThread(thread: Thread): Promise<void> {
    await this.pool.query(
      `INSERT INTO agent_threads (thread_id, data) VALUES ($1, $2)
       ON CONFLICT (thread_id) DO UPDATE SET data = EXCLUDED.data`,
      [thread.thread_id, thread],
    );
  }

  async deleteThread(id: string): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      await client.query('DELETE FROM agent_threads WHERE thread_id = $1', [id]);
      await client.query('DELETE FROM agent_runs WHERE thread_id = $1', [id]);
    });
  }

  async listThreads(): Promise<Thread[]> {
    return this.all<Thread>('SELECT data FROM agent_threads');
  }

  async getRun(id: string): Promise<Run | null> {
    return this.one<Run>('SELECT data FROM agent_runs WHERE run_id = $1', [id]);
  }

  async putRun(run: Run): Promise<void> {
    await this.pool.query(
      `INSERT INTO agent_runs (run_id, thread_id, created_at, data) VALUES ($1, $2, $3, $4)
       ON CONFLICT (run_id) DO UPDATE
       SET thread_id = EXCLUDED.thread_id, created_at = EXCLUDED.created_at, data = EXCLUDED.data`,
      [run.run_id, run.thread_id, run.created_at, run],
    );
  }

  async deleteRun(id: string): Promise<void> {
    await this.pool.query('DELETE FROM agent_runs WHERE run_id = $1', [id]);
  }

  async listRuns(threadId: string): Promise<Run[]> {
    return this.all<Run>('SELECT data FROM agent_runs WHERE thread_id = $1 ORDER BY created_at, run_id', [threadId]);
  }

  async getCron(id: string): Promise<Cron | null> {
    return this.one<Cron>('SELECT data FROM agent_crons WHERE cron_id = $1', [id]);
  }

  async putCron(cron: Cron): Promise<void> {
    await this.pool.query(
      `INSERT INTO agent_crons (cron_id, data) VALUES ($1, $2)
       ON CONFLICT (cron_id) DO UPDATE SET data = EXCLUDED.data`,
      [cron.cron_id, cron],
    );
  }

  async listCrons(): Promise<Cron[]> {
    return this.all<Cron>('SELECT data FROM agent_crons');
  }

  async deleteCron(id: string): Promise<void> {
    await this.pool.query('DELETE FROM agent_crons WHERE cron_id = $1', [id]);
  }

  async claim(key: string, ms: number): Promise<boolean> {
    if (++this.claims % LEASE_SWEEP_EVERY === 0)
      await this.pool.query("DELETE FROM agent_leases WHERE expires_at < clock_timestamp() - interval '1 minute'");
    const { rowCount } = await this.pool.query(
      `INSERT INTO agent_leases AS l (key, expires_at) VALUES ($1, clock_timestamp() + $2 * interval '1 millisecond')
       ON CONFLICT (key) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE l.expires_at <= clock_timestamp()`,
      [key, ms],
    );
    return rowCount === 1;
  }

  async lease(key: string, ms: number): Promise<void> {
    await this.pool.query(
      `INSERT INTO agent_leases (key, expires_at) VALUES ($1, clock_timestamp() + $2 * interval '1 millisecond')
       ON CONFLICT (key) DO UPDATE SET expires_at = EXCLUDED.expires_at`,
      [key, ms],
    );
  }

  async held(key: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      'SELECT 1 FROM agent_leases WHERE key = $1 AND expires_at > clock_timestamp()',
      [key],
    );
    return rowCount === 1;
  }

  async close(): Promise<void> {
    if (this.ownsPool) await this.pool.end();
  }

  private async one<T>(sql: string, params: unknown[]): Promise<T | null> {
    const { rows } = await this.pool.query<{ data: T }>(sql, params);
    return rows[0]?.data ?? null;
  }

  private async all<T>(sql: string, params: unknown[] = []): Promise<T[]> {
    return (await this.pool.query<{ data: T }>(sql, params)).rows.map((r) => r.data);
  }
}
