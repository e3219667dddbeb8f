import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from './fixtures/app/graphs.ts';
import { eventually, newKey, parseSse, startAgentServer, userInput, type RunningAgentServer } from './helpers.ts';

/**
 * The Agent Server alone on port 0, over plain HTTP: what the wire looks
 * like (SSE framing, headers, error bodies) independent of any client.
 */
let as: RunningAgentServer;
const key = newKey();
beforeAll(async () => {
  as = await startAgentServer({ heartbeatMs: 100 });
});
afterAll(() => as.close());

const call = (
  path: string,
  init: { method?: string; body?: unknown; key?: string | null; signal?: AbortSignal } = {},
) =>
  fetch(`${as.url}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { ...(init.key === null ? {} : { 'x-api-key': init.key ?? key }), 'content-type': 'application/json' },
    body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
    signal: init.signal,
  });
const json = async (path: string, init: Parameters<typeof call>[1] = {}) => {
  const res = await call(path, init);
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
};
const newThread = async () => (await json('/threads', { body: {} })).body.thread_id as string;

describe('health and authentication', () => {
  it('answers /ok and /info without a key', async () => {
    expect(await json('/ok', { key: null })).toMatchObject({ status: 200, body: { ok: true } });
    const info = await json('/info', { key: null });
    expect(info.status).toBe(200);
    expect(info.body).toMatchObject({
      version: expect.any(String),
      langgraph_js_version: expect.stringMatching(/^\d+\./),
      flags: { assistants: true },
    });
  });

  it.each([
    ['no key', null, /Missing X-Api-Key/],
    ['an unknown key', 'not-a-key', /Invalid API key/],
    ["a key of another organisation than the deployment's", newKey('other'), /Invalid API key/],
  ])('answers 401 with a reason to %s', async (_name, k, detail) => {
    const res = await json('/assistants/search', { body: {}, key: k });
    expect(res.status).toBe(401);
    expect(res.body.detail).toMatch(detail);
  });
});

describe('the user object', () => {
  it('is the key owner without a custom handler, the same object under both names', async () => {
    const res = await json('/runs/wait', { body: { assistant_id: 'whoami', input: userInput('who') } });
    expect(JSON.parse(res.body.messages.at(-1).content)).toEqual({
      identity: 'acme',
      team: null,
      fields: ['display_name', 'identity', 'is_authenticated', 'kind', 'org', 'permissions', 'workspace'],
      same: true,
      tokenLength: 0,
    });
  });
});

describe('assistants', () => {
  it('creates a default assistant per graph, created_by system, addressable by graph name', async () => {
    const res = await json('/assistants/search', { body: { metadata: { created_by: 'system' }, limit: 100 } });
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    expect(res.body.map((a: any) => a.graph_id).sort()).toEqual([
      'agent',
      'custom',
      'factory',
      'failing',
      'remember',
      'slow',
      'uncompiled',
      'whoami',
    ]);
    const byName = await json('/assistants/agent');
    const agent = res.body.find((a: any) => a.graph_id === 'agent');
    expect(byName.body).toEqual(agent);
    expect((await json(`/assistants/${agent.assistant_id}`)).body).toEqual(agent);
  });

  it('pages with limit and offset, X-Pagination-Total and X-Pagination-Next', async () => {
    const first = await json('/assistants/search', {
      body: { metadata: { created_by: 'system' }, limit: 4, offset: 0 },
    });
    expect(first.body).toHaveLength(4);
    expect(first.headers.get('x-pagination-total')).toBe('8');
    expect(first.headers.get('x-pagination-next')).toBe('4');
    const second = await json('/assistants/search', {
      body: { metadata: { created_by: 'system' }, limit: 5, offset: 4 },
    });
    expect(second.body).toHaveLength(4);
    expect(second.headers.get('x-pagination-next')).toBeNull();
    const ids = [...first.body, ...second.body].map((a: any) => a.assistant_id);
    expect(new Set(ids).size).toBe(8);
  });

  it('filters by graph_id and exact metadata', async () => {
    const tag = randomUUID();
    const created = await json('/assistants', { body: { graph_id: 'agent', metadata: { tag, n: 1 }, name: 'mine' } });
    expect(created.status).toBe(200);
    await json('/assistants', { body: { graph_id: 'slow', metadata: { tag, n: 2 } } });
    const found = await json('/assistants/search', { body: { metadata: { tag }, graph_id: 'agent' } });
    expect(found.body.map((a: any) => a.assistant_id)).toEqual([created.body.assistant_id]);
    expect((await json('/assistants/search', { body: { metadata: { tag, n: 3 } } })).body).toEqual([]);
  });

  it('answers 409 for an existing id, 404 for an unknown graph or id, 422 for a bad body', async () => {
    const id = randomUUID();
    expect((await json('/assistants', { body: { graph_id: 'agent', assistant_id: id } })).status).toBe(200);
    expect((await json('/assistants', { body: { graph_id: 'agent', assistant_id: id } })).status).toBe(409);
    expect(
      (await json('/assistants', { body: { graph_id: 'agent', assistant_id: id, if_exists: 'do_nothing' } })).status,
    ).toBe(200);
    const unknownGraph = await json('/assistants', { body: { graph_id: 'nope' } });
    expect(unknownGraph.status).toBe(404);
    expect(unknownGraph.body.detail).toMatch(/Graph "nope" not found/);
    expect((await json(`/assistants/${randomUUID()}`)).status).toBe(404);
    const bad = await json('/assistants/search', { body: { limit: 0 } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ['body', 'limit'], type: 'too_small' });
  });
});

describe('run stream framing', () => {
  it('sends metadata first, one event, one JSON data line and its number (id) per frame, Content-Location and Location', async () => {
    const res = await call('/runs/stream', {
      body: { assistant_id: 'agent', input: userInput('hello there'), stream_mode: ['updates', 'messages-tuple'] },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await res.text();
    const frames = parseSse(text).filter((f) => f.comment === null);
    expect(frames[0]?.event).toBe('metadata');
    const meta = JSON.parse(frames[0]!.data!);
    expect(meta).toEqual({ run_id: expect.any(String), attempt: 1 });
    expect(res.headers.get('content-location')).toBe(`/runs/${meta.run_id}`);
    expect(res.headers.get('location')).toBe(`/runs/${meta.run_id}/stream`);
    const blocks = text.split('\n\n').filter((b) => b.trim() !== '' && !b.startsWith(':'));
    blocks.forEach((block, i) => {
      const lines = block.split('\n');
      expect(lines).toHaveLength(3);
      expect(lines[0]).toMatch(/^event: \S+$/);
      expect(lines[1]).toMatch(/^data: /);
      expect(() => JSON.parse(lines[1]!.slice(6))).not.toThrow();
      expect(lines[2]).toBe(`id: ${i + 1}`);
    });
    expect(new Set(frames.map((f) => f.event))).toEqual(new Set(['metadata', 'updates', 'messages']));
    const updates = frames.filter((f) => f.event === 'updates').map((f) => Object.keys(JSON.parse(f.data!)));
    expect(updates).toEqual([['greet'], ['model']]);
  });

  it('streams as the graph runs: the first frame arrives before the run ends', async () => {
    const started = Date.now();
    const res = await call('/runs/stream', {
      body: {
        assistant_id: 'agent',
        input: userInput('slowly'),
        config: { configurable: { token_delay_ms: 40 } },
        stream_mode: 'messages-tuple',
      },
    });
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    const firstAt = Date.now() - started;
    expect(first).toMatch(/^event: metadata\ndata: .*\nid: 1\n\n/);
    let rest = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    const total = Date.now() - started;
    expect(parseSse(rest).filter((f) => f.event === 'messages').length).toBeGreaterThan(10);
    expect(total - firstAt).toBeGreaterThan(400);
  });

  it('keeps an idle stream open with heartbeat comments', async () => {
    const res = await call('/runs/stream', {
      body: {
        assistant_id: 'slow',
        input: userInput('x'),
        config: { configurable: { wait_ms: 450 } },
        stream_mode: 'updates',
      },
    });
    const frames = parseSse(await res.text());
    const beats = frames.filter((f) => f.comment === 'heartbeat').length;
    expect(beats).toBeGreaterThanOrEqual(2);
    expect(frames.at(-1)?.event).toBe('updates');
  });

  it('ends a failing run with an error frame, and no stack trace', async () => {
    const res = await call('/runs/stream', {
      body: { assistant_id: 'failing', input: userInput('x'), stream_mode: 'updates' },
    });
    const text = await res.text();
    const frames = parseSse(text);
    expect(frames.map((f) => f.event)).toEqual(['metadata', 'updates', 'error']);
    expect(JSON.parse(frames[2]!.data!)).toEqual({ error: 'TypeError', message: 'the tool broke' });
    expect(text).not.toMatch(/\n\s+at /);
  });

  it('streams the custom mode', async () => {
    const frames = parseSse(
      await (
        await call('/runs/stream', { body: { assistant_id: 'custom', input: userInput('x'), stream_mode: ['custom'] } })
      ).text(),
    );
    expect(frames.filter((f) => f.event === 'custom').map((f) => JSON.parse(f.data!))).toEqual([
      { progress: 50 },
      { progress: 100 },
    ]);
  });

  it('runs uncompiled graphs and graph factories', async () => {
    const a = await json('/runs/wait', { body: { assistant_id: 'uncompiled', input: userInput('x') } });
    expect(a.body.messages.at(-1).content).toBe('uncompiled ok');
    const b = await json('/runs/wait', { body: { assistant_id: 'factory', input: userInput('x') } });
    expect(b.body.messages.at(-1).content).toBe('factory for factory');
  });
});

describe('run errors', () => {
  it('answers 422 naming the field for an unsupported stream mode, a missing assistant and bad JSON', async () => {
    const mode = await json('/runs/stream', { body: { assistant_id: 'agent', stream_mode: 'events' } });
    expect(mode.status).toBe(422);
    expect(mode.body.detail[0].loc).toEqual(['body', 'stream_mode']);
    const missing = await json('/runs/wait', { body: { input: {} } });
    expect(missing.body.detail).toEqual([{ loc: ['body', 'assistant_id'], msg: 'Field required', type: 'missing' }]);
    const notJson = await json('/runs/wait', { body: '{"assistant_id": ' });
    expect(notJson).toMatchObject({ status: 422, body: { detail: [{ type: 'json_invalid' }] } });
  });

  it('answers 404 for an unknown assistant, thread or path', async () => {
    expect((await json('/runs/wait', { body: { assistant_id: 'no-such-graph' } })).status).toBe(404);
    expect((await json(`/threads/${randomUUID()}/runs/wait`, { body: { assistant_id: 'agent' } })).status).toBe(404);
    expect((await json(`/threads/${randomUUID()}`)).status).toBe(404);
    expect(await json('/nowhere')).toMatchObject({ status: 404, body: { detail: 'Not Found' } });
  });

  it('creates the thread of a run with if_not_exists=create', async () => {
    const id = randomUUID();
    const res = await json(`/threads/${id}/runs/wait`, {
      body: { assistant_id: 'agent', input: userInput('hi'), if_not_exists: 'create' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-location')).toMatch(new RegExp(`^/threads/${id}/runs/`));
    expect((await json(`/threads/${id}`)).body).toMatchObject({ status: 'idle', metadata: { graph_id: 'agent' } });
  });

  it('answers a failed waited run with __error__', async () => {
    const res = await json('/runs/wait', { body: { assistant_id: 'failing', input: userInput('x') } });
    expect(res).toMatchObject({ status: 200, body: { __error__: { error: 'TypeError', message: 'the tool broke' } } });
  });
});

describe('busy threads', () => {
  /** Starts a slow run on `thread` and resolves once the graph is inside it, with the response still streaming. */
  async function occupy(thread: string, waitMs = 30_000) {
    const res = await call(`/threads/${thread}/runs/stream`, {
      body: {
        assistant_id: 'slow',
        input: userInput('x'),
        config: { configurable: { wait_ms: waitMs } },
        stream_mode: 'updates',
      },
    });
    const runId = res.headers.get('content-location')!.split('/').at(-1)!;
    await eventually(async () => (registry.started.has(runId) ? true : undefined));
    return { res, runId };
  }

  it('answers 409 for a second run while one is active, and marks the thread busy', async () => {
    const thread = await newThread();
    const { res, runId } = await occupy(thread, 400);
    expect((await json(`/threads/${thread}`)).body.status).toBe('busy');
    const second = await json(`/threads/${thread}/runs/wait`, {
      body: { assistant_id: 'agent', input: userInput('again') },
    });
    expect(second.status).toBe(409);
    expect(second.body.detail).toMatch(/already running/);
    await res.text();
    expect(registry.finished.has(runId)).toBe(true);
    expect((await json(`/threads/${thread}`)).body.status).toBe('idle');
  });

  it('interrupt cancels the active run and runs the new one', async () => {
    const thread = await newThread();
    const { res, runId } = await occupy(thread);
    const second = await json(`/threads/${thread}/runs/wait`, {
      body: { assistant_id: 'agent', input: userInput('now'), multitask_strategy: 'interrupt' },
    });
    expect(second.status).toBe(200);
    expect(second.body.messages.at(-1).content).toMatch(/You said "now"/);
    const frames = parseSse(await res.text());
    expect(frames.at(-1)?.event).toBe('error');
    expect(JSON.parse(frames.at(-1)!.data!).error).toBe('CancelledError');
    expect(registry.cancelled.has(runId)).toBe(true);
    expect((await json(`/threads/${thread}/runs/${runId}`)).body.status).toBe('interrupted');
  });

  it('enqueue waits for the active run, then runs', async () => {
    const thread = await newThread();
    const { res, runId } = await occupy(thread, 300);
    const second = await json(`/threads/${thread}/runs/wait`, {
      body: { assistant_id: 'agent', input: userInput('queued'), multitask_strategy: 'enqueue' },
    });
    expect(second.status).toBe(200);
    expect(registry.finished.has(runId)).toBe(true);
    expect(second.body.messages.map((m: any) => m.content)).toEqual([
      'x',
      'waited',
      'queued',
      expect.stringMatching(/You said "queued"/),
    ]);
    await res.text();
    const runs = (await json(`/threads/${thread}/runs`)).body;
    expect(runs.map((r: any) => r.status)).toEqual(['success', 'success']);
  });
});

describe('client disconnects', () => {
  it('cancels the run by default (on_disconnect: cancel)', async () => {
    const thread = await newThread();
    const ac = new AbortController();
    const res = await call(`/threads/${thread}/runs/stream`, {
      body: { assistant_id: 'slow', input: userInput('x'), stream_mode: 'updates' },
      signal: ac.signal,
    });
    const runId = res.headers.get('content-location')!.split('/').at(-1)!;
    await eventually(async () => (registry.started.has(runId) ? true : undefined));
    ac.abort();
    await eventually(async () => (registry.cancelled.has(runId) ? true : undefined));
    const run = await eventually(async () => {
      const r = (await json(`/threads/${thread}/runs/${runId}`)).body;
      return r.status === 'running' ? undefined : r;
    });
    expect(run.status).toBe('interrupted');
    expect((await json(`/threads/${thread}`)).body.status).toBe('idle');
  });

  it('lets the run finish with on_disconnect: continue', async () => {
    const thread = await newThread();
    const ac = new AbortController();
    const res = await call(`/threads/${thread}/runs/stream`, {
      body: {
        assistant_id: 'slow',
        input: userInput('x'),
        config: { configurable: { wait_ms: 300 } },
        on_disconnect: 'continue',
      },
      signal: ac.signal,
    });
    const runId = res.headers.get('content-location')!.split('/').at(-1)!;
    await eventually(async () => (registry.started.has(runId) ? true : undefined));
    ac.abort();
    const run = await eventually(async () => {
      const r = (await json(`/threads/${thread}/runs/${runId}`)).body;
      return r.status === 'running' ? undefined : r;
    });
    expect(run.status).toBe('success');
    expect(registry.cancelled.has(runId)).toBe(false);
    expect((await json(`/threads/${thread}`)).body.values.messages.at(-1).content).toBe('waited');
  });
});

describe('run control on the wire', () => {
  it('cancel answers 202 (or 204 with wait=1) without a body; a joined stream is SSE naming the run', async () => {
    const thread = await newThread();
    const started = await call(`/threads/${thread}/runs/stream`, {
      body: { assistant_id: 'slow', input: userInput('x'), stream_mode: 'updates' },
    });
    const location = started.headers.get('content-location')!;
    const runId = location.split('/').at(-1)!;
    await eventually(async () => (registry.started.has(runId) ? true : undefined));
    const joined = await call(`${location}/stream?stream_mode=updates`);
    expect(joined.status).toBe(200);
    expect(joined.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(joined.headers.get('content-location')).toBe(location);
    const cancelled = await call(`${location}/cancel?wait=1&action=interrupt`, { method: 'POST' });
    expect(cancelled.status).toBe(204);
    expect(await cancelled.text()).toBe('');
    // The joiner came after `metadata`: it sees only how the run ended.
    expect(parseSse(await joined.text()).filter((f) => f.comment === null)).toEqual([
      {
        event: 'error',
        data: JSON.stringify({ error: 'CancelledError', message: 'Run cancelled on request.' }),
        comment: null,
      },
    ]);
    expect(parseSse(await started.text()).at(-1)?.event).toBe('error');
    const again = await call(`${location}/cancel`, { method: 'POST' });
    expect(again.status).toBe(202);
    expect(await again.text()).toBe('');
    expect((await call(`/threads/${thread}`, { method: 'DELETE' })).status).toBe(204);
  });
});

describe('shutdown', () => {
  it('cancels running graphs and ends their streams with an error frame', async () => {
    const own = await startAgentServer();
    const res = await fetch(`${own.url}/runs/stream`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ assistant_id: 'slow', input: userInput('x'), stream_mode: 'updates' }),
    });
    const runId = res.headers.get('content-location')!.split('/').at(-1)!;
    await eventually(async () => (registry.started.has(runId) ? true : undefined));
    const text = res.text();
    await own.close();
    const frames = parseSse(await text);
    expect(frames.at(-1)?.event).toBe('error');
    expect(JSON.parse(frames.at(-1)!.data!)).toMatchObject({ error: 'ServiceUnavailable' });
    expect(registry.cancelled.has(runId)).toBe(true);
  });
});
