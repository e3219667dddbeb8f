import type { Redis } from 'ioredis';
import type { AgentStore } from './agent-store.ts';
import type { Assistant, AssistantVersion, Cron, Run, Thread } from './records.ts';
import { closeRedis } from '../../../redis-client.ts';

/**
 * The Agent Server's store in Redis (plain Redis, no modules). Every key
 * sits under `<prefix>:`, so several deployments can share one Redis:
 *
 *   assistant:<id>        JSON assistant
 *   assistants            set of assistant ids
 *   assistant-versions:<id>  hash version → JSON assistant as of that version
 *   thread:<id>           JSON thread
 *   threads               set of thread ids
 *   run:<id>              JSON run
 *   thread-runs:<thread>  set of the thread's run ids
 *   cron:<id>             JSON cron
 *   crons                 set of cron ids
 *   claim:<key>           a claim or lease (SET [NX] PX): which server fires a cron at a
 *                         given time, which server is still running a run
 *
 * Each put writes the record and its index entry in one MULTI. Listing
 * reads the index then MGETs the records; callers filter, sort and page
 * (ids whose record vanished between the two reads are skipped). Graph
 * state lives in the checkpointer (redis-checkpointer.ts), not here.
 */
export interface RedisAgentStoreOptions {
  /** Key prefix; default `agent`. */
  readonly prefix?: string;
  /** Whether `close()` quits the client. Off when the client is shared. */
  readonly ownsClient?: boolean;
}

export class RedisAgentStore implements AgentStore {
  readonly kind = 'redis';
  private readonly base: string;
  private readonly ownsClient: boolean;

  constructor(
    private readonly client: Redis,
    { prefix = 'agent', ownsClient = false }: RedisAgentStoreOptions = {},
  ) {
    this.base = `${prefix}:`;
    this.ownsClient = ownsClient;
  }

  async getAssistant(id: string): Promise<Assistant | null> {
    return parse<Assistant>(await this.client.get(this.k(`assistant:${id}`)));
  }

  async putAssistant(assistant: Assistant): Promise<void> {
    const id = assistant.assistant_id;
    const { updated_at: _, ...version } = assistant;
    await this.client
      .multi()
      .set(this.k(`assistant:${id}`), JSON.stringify(assistant))
      .sadd(this.k('assistants'), id)
      .hset(this.k(`assistant-versions:${id}`), String(assistant.version), JSON.stringify(version))
      .exec()
      .then(check);
  }

  async listAssistants(): Promise<Assistant[]> {
    return this.listByIndex<Assistant>(this.k('assistants'), 'assistant:');
  }

  async listAssistantVersions(id: string): Promise<AssistantVersion[]> {
    return Object.values(await this.client.hgetall(this.k(`assistant-versions:${id}`))).map(
      (raw) => JSON.parse(raw) as AssistantVersion,
    );
  }

  async deleteAssistant(id: string): Promise<void> {
    await this.client
      .multi()
      .unlink(this.k(`assistant:${id}`), this.k(`assistant-versions:${id}`))
      .srem(this.k('assistants'), id)
      .exec()
      .then(check);
  }

  async getThread(id: string): Promise<Thread | null> {
    return parse<Thread>(await this.client.get(this.k(`thread:${id}`)));
  }

  async putThread(thread: Thread): Promise<void> {
    const id = thread.thread_id;
    await this.client
      .multi()
      .set(this.k(`thread:${id}`), JSON.stringify(thread))
      .sadd(this.k('threads'), id)
      .exec()
      .then(check);
  }

  async deleteThread(id: string): Promise<void> {
    const runsKey = this.k(`thread-runs:${id}`);
    const runIds = await this.client.smembers(runsKey);
    const tx = this.client
      .multi()
      .unlink(this.k(`thread:${id}`), runsKey)
      .srem(this.k('threads'), id);
    if (runIds.length > 0) tx.unlink(...runIds.map((r) => this.k(`run:${r}`)));
    await tx.exec().then(check);
  }

  async listThreads(): Promise<Thread[]> {
    return this.listByIndex<Thread>(this.k('threads'), 'thread:');
  }

  async getRun(id: string): Promise<Run | null> {
    return parse<Run>(await this.client.get(this.k(`run:${id}`)));
  }

  async putRun(run: Run): Promise<void> {
    const key = this.k(`run:${run.run_id}`);
    const previous = parse<Run>(await this.client.get(key));
    const tx = this.client
      .multi()
      .set(key, JSON.stringify(run))
      .sadd(this.k(`thread-runs:${run.thread_id}`), run.run_id);
    if (previous !== null && previous.thread_id !== run.thread_id)
      tx.srem(this.k(`thread-runs:${previous.thread_id}`), run.run_id);
    await tx.exec().then(check);
  }

  async deleteRun(id: string): Promise<void> {
    const run = await this.getRun(id);
    const tx = this.client.multi().unlink(this.k(`run:${id}`));
    if (run !== null) tx.srem(this.k(`thread-runs:${run.thread_id}`), id);
    await tx.exec().then(check);
  }

  async listRuns(threadId: string): Promise<Run[]> {
    const runs = (await this.listByIndex<Run>(this.k(`thread-runs:${threadId}`), 'run:')).filter(
      (r) => r.thread_id === threadId,
    );
    return runs.sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));
  }

  async getCron(id: string): Promise<Cron | null> {
    return parse<Cron>(await this.client.get(this.k(`cron:${id}`)));
  }

  async putCron(cron: Cron): Promise<void> {
    const id = cron.cron_id;
    await this.client
      .multi()
      .set(this.k(`cron:${id}`), JSON.stringify(cron))
      .sadd(this.k('crons'), id)
      .exec()
      .then(check);
  }

  async listCrons(): Promise<Cron[]> {
    return this.listByIndex<Cron>(this.k('crons'), 'cron:');
  }

  async deleteCron(id: string): Promise<void> {
    await this.client
      .multi()
      .unlink(this.k(`cron:${id}`))
      .srem(this.k('crons'), id)
      .exec()
      .then(check);
  }

  async claim(key: string, ms: number): Promise<boolean> {
    return (await this.client.set(this.k(`claim:${key}`), '1', 'PX', ms, 'NX')) === 'OK';
  }

  async lease(key: string, ms: number): Promise<void> {
    await this.client.set(this.k(`claim:${key}`), '1', 'PX', ms);
  }

  async held(key: string): Promise<boolean> {
    return (await this.client.exists(this.k(`claim:${key}`))) === 1;
  }

  async close(): Promise<void> {
    if (this.ownsClient) await closeRedis(this.client);
  }

  private async listByIndex<T>(indexKey: string, recordPrefix: string): Promise<T[]> {
    const ids = await this.client.smembers(indexKey);
    if (ids.length === 0) return [];
    const raws = await this.client.mget(ids.map((id) => this.k(`${recordPrefix}${id}`)));
    return raws.map((raw) => parse<T>(raw)).filter((v): v is T => v !== null);
  }

  private k(suffix: string): string {
    return this.base + suffix;
  }
}

function parse<T>(raw: string | null): T | null {
  return raw === null ? null : (JSON.parse(raw) as T);
}

/** MULTI answers `[err, result][]`; a failed command inside it fails the write. */
function check(results: [Error | null, unknown][] | null): void {
  if (results === null) throw new Error('redis transaction aborted');
  for (const [err] of results) if (err) throw err;
}
