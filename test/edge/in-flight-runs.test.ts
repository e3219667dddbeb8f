import { randomBytes } from 'node:crypto';
import { Client } from '@langchain/langgraph-sdk';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { deleteByPrefix } from '../helpers/redis-keys.ts';
import { SHARED_REDIS_URL, sharedRedis } from '../helpers/shared-redis.ts';
import { newKey, startAgentServer, type RunningAgentServer } from '../services/agent-server/helpers.ts';

/**
 * `until: run` through the edge with the real Agent Server and the unmodified public client: a background run
 * (`runs.create`) holds its slot while it runs, after its response has long ended, and gives it back when the Agent
 * Server finishes or cancels it. On the memory store and on Redis with two edges.
 */

const RULES = `
guards:
  - id: runs-in-flight
    by: api-key
    concurrent: 1
    until: run
    category: Runs in flight (API)
    match: { method: POST, any: [{ template: "/threads/{uuid}/runs" }, { template: "/threads/{uuid}/runs/stream" }, { template: "/threads/{uuid}/runs/wait" }, { template: "/threads/{uuid}/commands" }] }
rules:
  - id: open
    limits:
      - { by: ip, count: 1000000, per: 1s, category: Test }
`;

let agent: RunningAgentServer;
let rules: ReturnType<typeof rulesDir>;
let redis: Redis;
const PREFIX = `t-inflight-runs-${randomBytes(6).toString('hex')}`;

beforeAll(async () => {
  agent = await startAgentServer();
  rules = rulesDir(RULES);
  redis = sharedRedis();
});

afterAll(async () => {
  await agent?.close();
  rules?.remove();
  await deleteByPrefix(redis, PREFIX);
  await redis.quit();
});

const input = { messages: [{ role: 'user', content: 'hello' }] };
const client = (edge: TestGateway, key: string) =>
  new Client({ apiUrl: edge.url, apiKey: key, callerOptions: { maxRetries: 0 } });

async function eventually<T>(what: string, f: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  for (let waited = 0; waited < ms; waited += 50) {
    const v = await f();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what}: not within ${ms} ms`);
}

/** Starts a run of `waitMs` on `thread` as soon as the key's slot is free again (each try until then answers 429). */
function runOnceSlotFree(what: string, c: Client, thread: string, waitMs: number) {
  return eventually(what, () =>
    c.runs
      .create(thread, 'slow', { input, config: { configurable: { wait_ms: waitMs } } })
      .catch((e: unknown) => ((e as { status?: number }).status === 429 ? undefined : Promise.reject(e))),
  );
}

function untilRunScenario(name: string, edges: () => TestGateway[]) {
  it(`${name}: a background run holds its slot until the Agent Server cancels or finishes it`, async () => {
    const [a, b = a] = edges();
    const key = newKey();
    const ca = client(a!, key);
    const cb = client(b!, key);
    const [t1, t2] = [await ca.threads.create(), await ca.threads.create()];

    const run = await ca.runs.create(t1.thread_id, 'slow', { input, config: { configurable: { wait_ms: 60_000 } } });
    await eventually('the run started', async () =>
      (await ca.runs.get(t1.thread_id, run.run_id)).status === 'running' ? true : undefined,
    );
    // The response ended long ago; the run goes on: no slot for a second run of this key, on either edge.
    for (const c of [ca, cb]) {
      const err = await c.runs.create(t2.thread_id, 'slow', { input }).catch((e: unknown) => e);
      expect(err).toMatchObject({ status: 429 });
      expect(String((err as Error).message)).toMatch(/"guard":"runs-in-flight"/);
    }
    // Other requests of the key are not held up.
    expect((await cb.threads.get(t1.thread_id)).thread_id).toBe(t1.thread_id);

    await ca.runs.cancel(t1.thread_id, run.run_id);
    // Cancelled: the slot comes back; a short run takes it and gives it back when it finishes.
    const short = await runOnceSlotFree('the slot came back after the cancel', cb, t2.thread_id, 300);
    const err = await ca.runs.create(t1.thread_id, 'slow', { input }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 429 });
    await cb.runs.join(t2.thread_id, short.run_id);
    const next = await runOnceSlotFree('the slot came back after the run finished', ca, t1.thread_id, 1);
    await ca.runs.join(t1.thread_id, next.run_id);
  });

  it(`${name}: a stream whose client left (on_disconnect: continue) holds its slot until its run ends`, async () => {
    const [a, b = a] = edges();
    const key = newKey();
    const ca = client(a!, key);
    const cb = client(b!, key);
    const [t1, t2] = [await ca.threads.create(), await ca.threads.create()];
    const leave = new AbortController();
    let runId = '';
    const stream = ca.runs.stream(t1.thread_id, 'slow', {
      input,
      config: { configurable: { wait_ms: 60_000 } },
      onDisconnect: 'continue',
      signal: leave.signal,
      onRunCreated: (m) => void (runId = m.run_id),
    });
    for await (const chunk of stream) if (chunk.event === 'metadata') break; // the client reads one event and leaves
    leave.abort();
    expect(runId).not.toBe('');
    await eventually('the run goes on without its client', async () =>
      (await cb.runs.get(t1.thread_id, runId)).status === 'running' ? true : undefined,
    );
    const err = await cb.runs.create(t2.thread_id, 'slow', { input }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 429 });
    await cb.runs.cancel(t1.thread_id, runId);
    const again = await runOnceSlotFree('the slot came back when the run was cancelled', cb, t2.thread_id, 1);
    await cb.runs.join(t2.thread_id, again.run_id);
  });

  it(`${name}: a runs.wait whose client left before the answer holds its slot until its run ends`, async () => {
    const [a, b = a] = edges();
    const key = newKey();
    const ca = client(a!, key);
    const cb = client(b!, key);
    const [t1, t2] = [await ca.threads.create(), await ca.threads.create()];
    const leave = new AbortController();
    const waiting = await fetch(`${a!.url}/threads/${t1.thread_id}/runs/wait`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ assistant_id: 'slow', input, config: { configurable: { wait_ms: 60_000 } } }),
      signal: leave.signal,
    });
    // The answer's head comes at once, naming the run (as the official servers answer a wait); the client leaves.
    expect(waiting.status).toBe(200);
    const location = waiting.headers.get('content-location') ?? '';
    const runId = location.split('/').at(-1)!;
    expect(location).toBe(`/threads/${t1.thread_id}/runs/${runId}`);
    leave.abort();
    await eventually('the run goes on without its client', async () =>
      (await cb.runs.get(t1.thread_id, runId)).status === 'running' ? true : undefined,
    );
    const err = await cb.runs.create(t2.thread_id, 'slow', { input }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 429 });
    await cb.runs.cancel(t1.thread_id, runId);
    const again = await runOnceSlotFree('the slot came back when the waited run was cancelled', cb, t2.thread_id, 1);
    await cb.runs.join(t2.thread_id, again.run_id);
  });

  it(`${name}: a protocol run.start (POST /threads/{id}/commands) holds its slot until its run ends`, async () => {
    const [a, b = a] = edges();
    const key = newKey();
    const ca = client(a!, key);
    const [t1, t2] = [await ca.threads.create(), await ca.threads.create()];
    const command = (edge: TestGateway, thread: string, waitMs: number) =>
      fetch(`${edge.url}/threads/${thread}/commands`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({
          id: 1,
          method: 'run.start',
          params: { assistant_id: 'slow', input, config: { configurable: { wait_ms: waitMs } } },
        }),
      });
    const started = await command(a!, t1.thread_id, 60_000);
    expect(started.status).toBe(200);
    const { result } = (await started.json()) as { result: { run_id: string } };
    // Named as the REST endpoints name a run: what the edge waits on.
    expect(started.headers.get('content-location')).toBe(`/threads/${t1.thread_id}/runs/${result.run_id}`);
    const refused = await command(b!, t2.thread_id, 1);
    expect(refused.status).toBe(429);
    expect(await refused.text()).toMatch(/"guard":"runs-in-flight"/);
    await ca.runs.cancel(t1.thread_id, result.run_id);
    const again = await eventually('the slot came back when the protocol run was cancelled', async () => {
      const res = await command(b!, t2.thread_id, 1);
      if (res.status === 429) return undefined;
      return res;
    });
    expect(again.status).toBe(200);
  });
}

describe('until: run, memory store', () => {
  let edge: TestGateway;
  beforeAll(async () => {
    edge = await startTestGateway({ RULES_DIR: rules.dir, AGENT_SERVER_URL: agent.url, CONTROL_PLANE_URL: agent.url });
  });
  afterAll(() => edge?.close());
  untilRunScenario('memory', () => [edge]);
});

describe('until: run, two edges sharing Redis', () => {
  const edges: TestGateway[] = [];
  beforeAll(async () => {
    const env = {
      REDIS_URL: SHARED_REDIS_URL,
      KEY_PREFIX: PREFIX,
      IDENTITY_SECRET: 'in-flight-runs-test-secret',
      RULES_DIR: rules.dir,
      AGENT_SERVER_URL: agent.url,
      CONTROL_PLANE_URL: agent.url,
      FAIL_MODE: 'closed',
      STORE_TIMEOUT_MS: '2000',
    };
    edges.push(await startTestGateway(env), await startTestGateway(env));
  });
  afterAll(() => Promise.all(edges.map((e) => e.close())));
  untilRunScenario('redis, two edges', () => edges);
});
