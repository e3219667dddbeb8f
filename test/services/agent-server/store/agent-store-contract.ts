import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentStore } from '../../../../src/services/agent-server/store/agent-store.ts';
import type { Assistant, Cron, Run, Thread } from '../../../../src/services/agent-server/store/records.ts';

/**
 * What every Agent Server store must do, run against each implementation
 * (memory, Redis and PostgreSQL; a store joins by calling this with its factory).
 */
export function storeContract(name: string, make: () => Promise<AgentStore>): void {
  describe(`${name} store contract`, () => {
    let store: AgentStore;
    beforeEach(async () => {
      store = await make();
    });
    afterEach(() => store.close());

    const now = new Date().toISOString();
    const assistant = (): Assistant => ({
      assistant_id: randomUUID(),
      graph_id: 'g',
      config: {},
      context: {},
      metadata: { a: [1] },
      name: 'n',
      description: null,
      version: 1,
      created_at: now,
      updated_at: now,
    });
    const thread = (): Thread => ({
      thread_id: randomUUID(),
      created_at: now,
      updated_at: now,
      metadata: { owner: 'x' },
      status: 'idle',
      values: { messages: [] },
      config: {},
      interrupts: {},
    });
    const run = (threadId: string, at = now): Run => ({
      run_id: randomUUID(),
      thread_id: threadId,
      assistant_id: randomUUID(),
      created_at: at,
      updated_at: at,
      status: 'pending',
      metadata: {},
      kwargs: { input: { n: 1 } },
      multitask_strategy: 'reject',
    });

    it('gives back what was put, and null for unknown ids', async () => {
      const a = assistant();
      const t = thread();
      const r = run(t.thread_id);
      await store.putAssistant(a);
      await store.putThread(t);
      await store.putRun(r);
      expect(await store.getAssistant(a.assistant_id)).toEqual(a);
      expect(await store.getThread(t.thread_id)).toEqual(t);
      expect(await store.getRun(r.run_id)).toEqual(r);
      expect(await store.getAssistant(randomUUID())).toBeNull();
      expect(await store.getThread(randomUUID())).toBeNull();
      expect(await store.getRun(randomUUID())).toBeNull();
    });

    it('keeps no shared references: changing an answer or an input changes nothing stored', async () => {
      const t = thread();
      await store.putThread(t);
      (t.metadata as Record<string, unknown>).owner = 'changed';
      const got = (await store.getThread(t.thread_id))!;
      (got.values as { messages: unknown[] }).messages.push('x');
      expect(await store.getThread(t.thread_id)).toMatchObject({ metadata: { owner: 'x' }, values: { messages: [] } });
    });

    it('replaces on put, lists everything, lists runs per thread oldest first', async () => {
      const t1 = thread();
      const t2 = thread();
      await store.putThread(t1);
      await store.putThread(t2);
      await store.putThread({ ...t1, status: 'busy' });
      const threads = await store.listThreads();
      expect(threads.map((t) => t.thread_id).sort()).toEqual([t1.thread_id, t2.thread_id].sort());
      expect(threads.find((t) => t.thread_id === t1.thread_id)?.status).toBe('busy');
      const r1 = run(t1.thread_id, '2026-01-01T00:00:00.000Z');
      const r2 = run(t1.thread_id, '2026-01-01T00:00:01.000Z');
      await store.putRun(r1);
      await store.putRun(r2);
      await store.putRun(run(t2.thread_id));
      expect((await store.listRuns(t1.thread_id)).map((r) => r.run_id)).toEqual([r1.run_id, r2.run_id]);
      const a = assistant();
      await store.putAssistant(a);
      expect((await store.listAssistants()).map((x) => x.assistant_id)).toContain(a.assistant_id);
    });

    it('deletes an assistant, leaving the others', async () => {
      const a = assistant();
      const b = assistant();
      await store.putAssistant(a);
      await store.putAssistant(b);
      await store.deleteAssistant(a.assistant_id);
      await store.deleteAssistant(randomUUID());
      expect(await store.getAssistant(a.assistant_id)).toBeNull();
      expect((await store.listAssistants()).map((x) => x.assistant_id)).toEqual([b.assistant_id]);
    });

    it('deletes one run, leaving its thread and the other runs', async () => {
      const t = thread();
      const r1 = run(t.thread_id, '2026-01-01T00:00:00.000Z');
      const r2 = run(t.thread_id, '2026-01-01T00:00:01.000Z');
      await store.putThread(t);
      await store.putRun(r1);
      await store.putRun(r2);
      await store.deleteRun(r1.run_id);
      await store.deleteRun(randomUUID());
      expect(await store.getRun(r1.run_id)).toBeNull();
      expect((await store.listRuns(t.thread_id)).map((r) => r.run_id)).toEqual([r2.run_id]);
      expect(await store.getThread(t.thread_id)).toEqual(t);
    });

    it('keeps every version of an assistant that was put, and deletes them with it', async () => {
      const a = assistant();
      await store.putAssistant(a);
      await store.putAssistant({ ...a, version: 2, name: 'second', updated_at: 'later' });
      await store.putAssistant({ ...a, version: 2, name: 'second again', updated_at: 'later still' });
      const versions = (await store.listAssistantVersions(a.assistant_id)).sort((x, y) => x.version - y.version);
      const { updated_at: _, ...first } = a;
      expect(versions).toEqual([first, { ...first, version: 2, name: 'second again' }]);
      expect(await store.listAssistantVersions(randomUUID())).toEqual([]);
      await store.deleteAssistant(a.assistant_id);
      expect(await store.listAssistantVersions(a.assistant_id)).toEqual([]);
    });

    it('keeps crons: put, replace, list, delete', async () => {
      const cron = (): Cron => ({
        cron_id: randomUUID(),
        assistant_id: randomUUID(),
        thread_id: null,
        user_id: 'u',
        schedule: '*/5 * * * *',
        payload: { input: { n: 1 } },
        next_run_date: now,
        end_time: null,
        metadata: { m: 1 },
        enabled: true,
        on_run_completed: 'delete',
        created_at: now,
        updated_at: now,
        run_as: { identity: 'u', display_name: 'U', permissions: [] },
      });
      const [a, b] = [cron(), cron()];
      await store.putCron(a);
      await store.putCron(b);
      expect(await store.getCron(a.cron_id)).toEqual(a);
      expect(await store.getCron(randomUUID())).toBeNull();
      await store.putCron({ ...a, enabled: false });
      expect((await store.getCron(a.cron_id))?.enabled).toBe(false);
      expect((await store.listCrons()).map((c) => c.cron_id).sort()).toEqual([a.cron_id, b.cron_id].sort());
      await store.deleteCron(a.cron_id);
      expect((await store.listCrons()).map((c) => c.cron_id)).toEqual([b.cron_id]);
    });

    it('grants a claim once until it expires', async () => {
      const key = randomUUID();
      expect(await store.claim(key, 100)).toBe(true);
      expect(await store.claim(key, 100)).toBe(false);
      expect(await store.claim(randomUUID(), 100)).toBe(true);
      await new Promise((r) => setTimeout(r, 150));
      expect(await store.claim(key, 100)).toBe(true);
    });

    it('holds a lease while it is renewed, and not after', async () => {
      const key = randomUUID();
      expect(await store.held(key)).toBe(false);
      await store.lease(key, 120);
      expect(await store.held(key)).toBe(true);
      await new Promise((r) => setTimeout(r, 80));
      await store.lease(key, 120);
      await new Promise((r) => setTimeout(r, 80));
      expect(await store.held(key)).toBe(true);
      expect(await store.claim(key, 100)).toBe(false);
      await new Promise((r) => setTimeout(r, 80));
      expect(await store.held(key)).toBe(false);
    });

    it('deletes a thread with its runs', async () => {
      const t = thread();
      const r = run(t.thread_id);
      await store.putThread(t);
      await store.putRun(r);
      await store.deleteThread(t.thread_id);
      expect(await store.getThread(t.thread_id)).toBeNull();
      expect(await store.getRun(r.run_id)).toBeNull();
      expect(await store.listRuns(t.thread_id)).toEqual([]);
    });
  });
}
