import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { openAgentStorage } from '../../../src/services/agent-server/store/open-storage.ts';
import type { AgentStore } from '../../../src/services/agent-server/store/agent-store.ts';
import { LEASE_MS } from '../../../src/services/agent-server/runs/run-leases.ts';
import { ORPHAN_SWEEP_MS } from '../../../src/services/agent-server/runs/orphan-sweep.ts';
import type { Run, Thread } from '../../../src/services/agent-server/store/records.ts';
import { deleteByPrefix } from '../../helpers/redis-keys.ts';
import { registry } from './fixtures/app/graphs.ts';
import { collect, eventually, newKey, sdk, startAgentServer, userInput, type RunningAgentServer } from './helpers.ts';
import { sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';
import { ownDatabase, type OwnDatabase } from '../../helpers/shared-postgres.ts';
import type { Chunk } from './lifecycle/context.ts';

/**
 * Agent Servers sharing one store and one Redis run relay (replicas of a
 * deployment, or one server restarted), the store in PostgreSQL (a database of
 * this file's own) and in Redis, each server's storage opened as every server
 * opens it (open-storage.ts): a run on one server is followed,
 * resumed, waited for and cancelled from the other, and a run whose server
 * died (no lease) is settled as `error` instead of staying `running` forever:
 * when it is read, at a server's start, and by every server's periodic sweep
 * (a server killed with SIGKILL, in a process of its own).
 */
const redis = sharedRedis({ maxRetriesPerRequest: 2 });
const log = pino({ level: 'silent' });
let db: OwnDatabase;
beforeAll(async () => {
  db = await ownDatabase();
});
/** How soon a run whose server died is settled: its lease lapses, then the next sweep of a server finds it. */
const RECOVERY_MS = LEASE_MS + ORPHAN_SWEEP_MS;
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const RELAY_SERVER = fileURLToPath(new URL('./fixtures/relay-server.ts', import.meta.url));
const waitFor = (check: () => boolean) => eventually(async () => (check() ? true : undefined), 8000);

afterAll(async () => {
  await db?.drop();
  await redis.quit();
});

describe.each(['PostgreSQL', 'Redis'] as const)('two servers on one store in %s', (kind) => {
  const prefix = uniquePrefix('test:shared');
  /** The records in PostgreSQL or in Redis; the run relay in Redis either way. */
  const database = () => (kind === 'PostgreSQL' ? { uri: db.uri, poolSize: 3 } : null);
  const open = () => openAgentStorage({ database: database(), redis: () => redis, redisPrefix: prefix, log });
  const start = async () => startAgentServer(await open());
  let a: RunningAgentServer;
  let b: RunningAgentServer;
  /** The store as a third party reads it (a read through a server settles an orphan by itself). */
  let store: AgentStore;
  beforeAll(async () => {
    [a, b] = await Promise.all([start(), start()]);
    store = (await open()).store;
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close(), store?.close()]);
    await deleteByPrefix(redis, prefix);
  });

  it('follows on one server a run of the other: joined, and resumed after a frame from the middle', async () => {
    const key = newKey();
    const onA = sdk(a.url, key).client;
    const onB = sdk(b.url, key).client;
    const thread = await onA.threads.create();
    let runId = '';
    const own: Chunk[] = [];
    const streamed = (async () => {
      for await (const chunk of onA.runs.stream(thread.thread_id, 'agent', {
        input: userInput('follow me from the other server'),
        streamMode: ['values', 'messages-tuple'],
        config: { configurable: { token_delay_ms: 80 } },
        onRunCreated: (m) => (runId = m.run_id),
      }))
        own.push(chunk);
    })();
    await waitFor(() => own.length >= 4);
    const middle = own[3]!.id!;
    const [resumed, joined] = await Promise.all([
      collect(onB.runs.joinStream(thread.thread_id, runId, { lastEventId: middle })) as Promise<Chunk[]>,
      collect(onB.runs.joinStream(thread.thread_id, runId)) as Promise<Chunk[]>,
    ]);
    await streamed;
    expect(a.server).not.toBe(b.server);
    expect(own.length).toBeGreaterThan(8);
    // Every frame after the one given, each once, in order, as the run's own stream had them.
    expect(resumed).toEqual(own.slice(4));
    // Joined from now: the tail of the run, ending as the run's own stream ends.
    expect(joined.length).toBeGreaterThan(0);
    expect(joined).toEqual(own.slice(own.length - joined.length));
    // Ended: the frames stay a while for resuming readers of either server.
    expect(await collect(onB.runs.joinStream(thread.thread_id, runId, { lastEventId: middle }))).toEqual(own.slice(4));
  }, 30_000);

  it('follows on one server the thread stream and the protocol events of a run of the other', async () => {
    const key = newKey();
    const onA = sdk(a.url, key).client;
    const onB = sdk(b.url, key).client;
    // The thread's stream (threads.joinStream) on B, of a run on A.
    const thread = await onA.threads.create();
    let runId = '';
    const own = collect(
      onA.runs.stream(thread.thread_id, 'agent', {
        input: userInput('the thread stream elsewhere'),
        streamMode: ['values', 'messages-tuple'],
        config: { configurable: { token_delay_ms: 80 } },
        onRunCreated: (m) => (runId = m.run_id),
      }),
    ) as Promise<Chunk[]>;
    await eventually(
      async () =>
        runId !== '' && (await onB.runs.get(thread.thread_id, runId)).status === 'running' ? true : undefined,
      8000,
    );
    const seen: Chunk[] = [];
    const ac = new AbortController();
    for await (const chunk of onB.threads.joinStream(thread.thread_id, { signal: ac.signal })) {
      seen.push(chunk);
      if (chunk.event === 'run_done') break;
    }
    ac.abort();
    const ran = await own;
    expect(seen.at(-1)).toMatchObject({ event: 'run_done', data: { run_id: runId, status: 'success' } });
    expect(seen.filter((ch) => ch.event === 'messages').length).toBeGreaterThan(3);
    // The run's last state, as its own stream ended.
    expect(seen.filter((ch) => ch.event === 'values').at(-1)?.data).toEqual(
      ran.filter((ch) => ch.event === 'values').at(-1)?.data,
    );

    // The protocol's events (POST /threads/{id}/stream/events) on B, of a protocol run started on A.
    const protocolThread = randomUUID();
    const headers = { 'x-api-key': key, 'content-type': 'application/json' };
    const started = await fetch(`${a.url}/threads/${protocolThread}/commands`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        id: 1,
        method: 'run.start',
        params: {
          assistant_id: 'agent',
          input: userInput('protocol elsewhere'),
          config: { configurable: { token_delay_ms: 80 } },
        },
      }),
    });
    const { result } = (await started.json()) as { result: { run_id: string } };
    await eventually(
      async () => ((await onB.runs.get(protocolThread, result.run_id)).status === 'running' ? true : undefined),
      8000,
    );
    const events = await fetch(`${b.url}/threads/${protocolThread}/stream/events`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ channels: ['lifecycle', 'messages'] }),
    });
    expect(events.status).toBe(200);
    const got: { method: string; params: { namespace: string[]; data: { event?: string } } }[] = [];
    const reader = events.body!.getReader();
    let text = '';
    const rootEnded = () =>
      got.some((e) => e.method === 'lifecycle' && e.params.namespace.length === 0 && e.params.data.event !== 'running');
    while (!rootEnded()) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
      const parts = text.split('\n\n');
      text = parts.pop()!;
      for (const part of parts) {
        const data = part.split('\n').find((l) => l.startsWith('data: '));
        if (data) got.push(JSON.parse(data.slice(6)));
      }
    }
    await reader.cancel();
    const root = got
      .filter((e) => e.method === 'lifecycle' && e.params.namespace.length === 0)
      .map((e) => e.params.data.event);
    expect(root).toEqual(['running', 'completed']);
    expect(got.filter((e) => e.method === 'messages').length).toBeGreaterThan(3);
  }, 30_000);

  it('cancels on one server a run of the other at once; its followers there see the cancel', async () => {
    const key = newKey();
    const onA = sdk(a.url, key).client;
    const onB = sdk(b.url, key).client;
    const thread = await onA.threads.create();
    let runId = '';
    const streamed = collect(
      onA.runs.stream(thread.thread_id, 'slow', {
        input: userInput('x'),
        config: { configurable: { wait_ms: 30_000 } },
        onRunCreated: (m) => (runId = m.run_id),
      }),
    );
    await waitFor(() => runId !== '' && registry.started.has(runId));

    expect((await onB.runs.get(thread.thread_id, runId)).status).toBe('running');
    const { client: watcher, seen } = sdk(b.url, key);
    const followed = collect(watcher.runs.joinStream(thread.thread_id, runId)) as Promise<Chunk[]>;
    // Joined (from now) before the cancel is asked: its stream is open.
    await waitFor(() => seen.some((s) => s.url.includes(`/runs/${runId}/stream`) && s.status === 200));
    const joined = onB.runs.join(thread.thread_id, runId);
    const asked = Date.now();
    await onB.runs.cancel(thread.thread_id, runId);
    await waitFor(() => registry.cancelled.has(runId));
    // Through the relay, not the lease renewal (every LEASE_MS / 5 = 2 s).
    expect(Date.now() - asked).toBeLessThan(1000);
    await joined;
    expect((await onB.runs.get(thread.thread_id, runId)).status).toBe('interrupted');
    expect((await streamed).at(-1)).toMatchObject({ event: 'error', data: { error: 'CancelledError' } });
    expect((await followed).at(-1)).toMatchObject({ event: 'error', data: { error: 'CancelledError' } });
  }, 20_000);

  it('deletes on one server a thread whose run goes on on the other: the run stops first, nothing comes back', async () => {
    const key = newKey();
    const onA = sdk(a.url, key).client;
    const onB = sdk(b.url, key).client;
    const thread = await onA.threads.create();
    const run = await onA.runs.create(thread.thread_id, 'slow', {
      input: userInput('x'),
      config: { configurable: { wait_ms: 30_000 } },
    });
    await waitFor(() => registry.started.has(run.run_id));
    await onB.threads.delete(thread.thread_id);
    expect(registry.cancelled.has(run.run_id)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 300)); // anything A would still write has landed
    expect(await store.getRun(run.run_id)).toBeNull();
    expect(await store.getThread(thread.thread_id)).toBeNull();
    await expect(onA.threads.get(thread.thread_id)).rejects.toMatchObject({ status: 404 });
  }, 20_000);

  it('a second run on one server of a thread busy on the other obeys its multitask strategy', async () => {
    const key = newKey();
    const onA = sdk(a.url, key).client;
    const onB = sdk(b.url, key).client;
    const thread = await onA.threads.create();
    const slowOnA = async (waitMs: number) => {
      const run = await onA.runs.create(thread.thread_id, 'slow', {
        input: userInput('x'),
        config: { configurable: { wait_ms: waitMs } },
        multitaskStrategy: 'enqueue',
      });
      await waitFor(() => registry.started.has(run.run_id));
      return run;
    };

    // reject: 409, as for a run on the same server.
    const first = await slowOnA(30_000);
    await expect(
      onB.runs.create(thread.thread_id, 'agent', { input: userInput('no'), multitaskStrategy: 'reject' }),
    ).rejects.toMatchObject({ status: 409 });

    // interrupt: the other server's run is cancelled at once, then this one runs.
    const asked = Date.now();
    const interrupting = await onB.runs.create(thread.thread_id, 'agent', {
      input: userInput('interrupting'),
      multitaskStrategy: 'interrupt',
    });
    await waitFor(() => registry.cancelled.has(first.run_id));
    expect(Date.now() - asked).toBeLessThan(1000);
    await onB.runs.join(thread.thread_id, interrupting.run_id);
    expect((await onB.runs.get(thread.thread_id, first.run_id)).status).toBe('interrupted');
    expect((await onB.runs.get(thread.thread_id, interrupting.run_id)).status).toBe('success');

    // enqueue: waits for the other server's run to end, then runs.
    const ahead = await slowOnA(3000);
    const queued = await onB.runs.create(thread.thread_id, 'agent', {
      input: userInput('after you'),
      multitaskStrategy: 'enqueue',
    });
    expect((await onB.runs.get(thread.thread_id, queued.run_id)).status).toBe('pending');
    await onB.runs.join(thread.thread_id, queued.run_id);
    expect(registry.finished.has(ahead.run_id)).toBe(true);
    expect((await onB.runs.get(thread.thread_id, ahead.run_id)).status).toBe('success');
    expect((await onB.runs.get(thread.thread_id, queued.run_id)).status).toBe('success');
    expect((await onA.threads.get(thread.thread_id)).status).toBe('idle');
  }, 30_000);

  it('two servers racing for one idle thread: one run starts, the other is rejected', async () => {
    const key = newKey();
    const onA = sdk(a.url, key).client;
    const onB = sdk(b.url, key).client;
    const thread = await onA.threads.create();
    const create = (c: typeof onA) =>
      c.runs.create(thread.thread_id, 'slow', {
        input: userInput('x'),
        config: { configurable: { wait_ms: 30_000 } },
        multitaskStrategy: 'reject',
      });
    const outcomes = await Promise.allSettled([create(onA), create(onB)]);
    const started = outcomes.filter((o) => o.status === 'fulfilled');
    const rejected = outcomes.filter((o) => o.status === 'rejected');
    expect(started).toHaveLength(1);
    expect(rejected).toHaveLength(1);
    expect((rejected[0] as PromiseRejectedResult).reason).toMatchObject({ status: 409 });
    const run = (started[0] as PromiseFulfilledResult<{ run_id: string }>).value;
    await onB.runs.cancel(thread.thread_id, run.run_id, true);
  }, 20_000);

  it('settles a run whose server was killed (SIGKILL) mid-run, read from another server, within the bound', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', RELAY_SERVER], {
      cwd: ROOT,
      env: { ...process.env, RELAY_PREFIX: prefix, ...(kind === 'PostgreSQL' && { RELAY_DATABASE_URI: db.uri }) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const line = /\{"url":"[^"]+"\}/.exec(out)?.[0];
          if (line) resolve((JSON.parse(line) as { url: string }).url);
        });
        child.once('exit', (code) => reject(new Error(`the server exited (${code})`)));
      });
      const key = newKey();
      const onChild = sdk(url, key).client;
      const onB = sdk(b.url, key).client;
      const thread = await onChild.threads.create();
      const run = await onChild.runs.create(thread.thread_id, 'slow', {
        input: userInput('x'),
        config: { configurable: { wait_ms: 120_000 } },
      });
      await eventually(async () => ((await store.getRun(run.run_id))?.status === 'running' ? true : undefined), 8000);
      expect((await onB.threads.get(thread.thread_id)).status).toBe('busy');
      child.kill('SIGKILL');
      const killed = Date.now();
      // Read in the store, not through a server (a read settles an orphan by itself): the sweep of A or B settles it.
      await eventually(
        async () => ((await store.getRun(run.run_id))?.status === 'error' ? true : undefined),
        RECOVERY_MS + 5000,
      );
      expect(Date.now() - killed).toBeLessThanOrEqual(RECOVERY_MS + 1000);
      expect((await onB.runs.get(thread.thread_id, run.run_id)).status).toBe('error');
      expect((await onB.threads.get(thread.thread_id)).status).toBe('error');
      // The thread runs again, on another server.
      await onB.runs.wait(thread.thread_id, 'agent', { input: userInput('again') });
      expect((await onB.threads.get(thread.thread_id)).status).toBe('idle');
    } finally {
      child.kill('SIGKILL');
    }
  }, 40_000);

  it('settles a run whose server died: at start for every run, and when a run is read', async () => {
    const now = new Date().toISOString();
    const orphan = async (): Promise<{ thread: Thread; run: Run }> => {
      const thread: Thread = {
        thread_id: randomUUID(),
        created_at: now,
        updated_at: now,
        metadata: { graph_id: 'agent' },
        status: 'busy',
        values: null,
        config: {},
        interrupts: {},
      };
      const run: Run = {
        run_id: randomUUID(),
        thread_id: thread.thread_id,
        assistant_id: randomUUID(),
        created_at: now,
        updated_at: now,
        status: 'running',
        metadata: {},
        kwargs: {},
        multitask_strategy: 'reject',
      };
      await store.putThread(thread);
      await store.putRun(run);
      return { thread, run };
    };
    // Left by a server killed mid-run: recorded running, no lease.
    const before = await orphan();
    const restarted = await start();
    try {
      const c = sdk(restarted.url, newKey()).client;
      expect((await store.getRun(before.run.run_id))?.status).toBe('error');
      expect((await c.threads.get(before.thread.thread_id)).status).toBe('error');
      const after = await orphan();
      expect((await c.runs.list(after.thread.thread_id)).map((r) => r.status)).toEqual(['error']);
      expect((await c.threads.get(after.thread.thread_id)).status).toBe('error');
      // The thread runs again.
      const values = (await c.runs.wait(after.thread.thread_id, 'agent', { input: userInput('still here') })) as {
        messages: unknown[];
      };
      expect(values.messages.length).toBeGreaterThan(0);
      expect((await c.threads.get(after.thread.thread_id)).status).toBe('idle');
    } finally {
      await restarted.close();
    }
  });
});
