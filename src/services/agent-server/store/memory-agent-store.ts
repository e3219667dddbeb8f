import type { AgentStore } from './agent-store.ts';
import type { Assistant, AssistantVersion, Cron, Run, Thread } from './records.ts';

/** The embedded store: maps in this process, copies in and out. */
export class MemoryAgentStore implements AgentStore {
  readonly kind = 'memory';
  private readonly assistants = new Map<string, Assistant>();
  private readonly versions = new Map<string, Map<number, AssistantVersion>>();
  private readonly threads = new Map<string, Thread>();
  private readonly runs = new Map<string, Run>();
  private readonly crons = new Map<string, Cron>();
  private readonly claims = new Map<string, number>();

  async getAssistant(id: string): Promise<Assistant | null> {
    return copy(this.assistants.get(id) ?? null);
  }

  async putAssistant(assistant: Assistant): Promise<void> {
    this.assistants.set(assistant.assistant_id, copy(assistant));
    const { updated_at: _, ...version } = copy(assistant);
    const versions = this.versions.get(assistant.assistant_id) ?? new Map<number, AssistantVersion>();
    this.versions.set(assistant.assistant_id, versions.set(assistant.version, version));
  }

  async listAssistants(): Promise<Assistant[]> {
    return [...this.assistants.values()].map(copy);
  }

  async listAssistantVersions(id: string): Promise<AssistantVersion[]> {
    return [...(this.versions.get(id)?.values() ?? [])].map(copy);
  }

  async deleteAssistant(id: string): Promise<void> {
    this.assistants.delete(id);
    this.versions.delete(id);
  }

  async getThread(id: string): Promise<Thread | null> {
    return copy(this.threads.get(id) ?? null);
  }

  async putThread(thread: Thread): Promise<void> {
    this.threads.set(thread.thread_id, copy(thread));
  }

  async deleteThread(id: string): Promise<void> {
    this.threads.delete(id);
    for (const [runId, run] of this.runs) if (run.thread_id === id) this.runs.delete(runId);
  }

  async listThreads(): Promise<Thread[]> {
    return [...this.threads.values()].map(copy);
  }

  async getRun(id: string): Promise<Run | null> {
    return copy(this.runs.get(id) ?? null);
  }

  async putRun(run: Run): Promise<void> {
    this.runs.set(run.run_id, copy(run));
  }

  async deleteRun(id: string): Promise<void> {
    this.runs.delete(id);
  }

  async listRuns(threadId: string): Promise<Run[]> {
    return [...this.runs.values()]
      .filter((r) => r.thread_id === threadId)
      .sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0))
      .map(copy);
  }

  async getCron(id: string): Promise<Cron | null> {
    return copy(this.crons.get(id) ?? null);
  }

  async putCron(cron: Cron): Promise<void> {
    this.crons.set(cron.cron_id, copy(cron));
  }

  async listCrons(): Promise<Cron[]> {
    return [...this.crons.values()].map(copy);
  }

  async deleteCron(id: string): Promise<void> {
    this.crons.delete(id);
  }

  async claim(key: string, ms: number): Promise<boolean> {
    if (await this.held(key)) return false;
    this.claims.set(key, Date.now() + ms);
    return true;
  }

  async lease(key: string, ms: number): Promise<void> {
    this.claims.set(key, Date.now() + ms);
  }

  async held(key: string): Promise<boolean> {
    const now = Date.now();
    for (const [k, until] of this.claims) if (until <= now) this.claims.delete(k);
    return this.claims.has(key);
  }

  async close(): Promise<void> {}
}

function copy<T>(value: T): T {
  return value === null ? value : structuredClone(value);
}
