import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseSse, userInput } from '../helpers.ts';
import { wireServer } from './wire-server.ts';

/** On the wire: how a run streams (SSE framing, heartbeats, error frames) and how a bad run request is answered. */
const { call, json } = wireServer();

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
      expect(lines[2]).toBe(`id: ${i}`);
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
    expect(first).toMatch(/^event: metadata\ndata: .*\nid: 0\n\n/);
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
    const mode = await json('/runs/stream', { body: { assistant_id: 'agent', stream_mode: 'bogus' } });
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
