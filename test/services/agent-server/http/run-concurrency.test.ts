import { describe, expect, it } from 'vitest';
import { registry } from '../fixtures/app/graphs.ts';
import { eventually, parseSse, startAgentServer, userInput } from '../helpers.ts';
import { wireServer } from './wire-server.ts';

/** On the wire: busy threads and multitask strategies, clients that leave, run control, and shutdown. */
const { key, call, json, newThread } = wireServer();

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
  it('cancels the run with on_disconnect: cancel', async () => {
    const thread = await newThread();
    const ac = new AbortController();
    const res = await call(`/threads/${thread}/runs/stream`, {
      body: { assistant_id: 'slow', input: userInput('x'), stream_mode: 'updates', on_disconnect: 'cancel' },
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
