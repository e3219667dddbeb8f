import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { newKey, parseSse, startAgentServer, userInput, type RunningAgentServer } from '../helpers.ts';

/** The protocol on the wire, without the SDK: event envelopes, replay from `since`, WebSocket subscriptions. */
let server: RunningAgentServer;
beforeAll(async () => {
  server = await startAgentServer();
});
afterAll(() => server.close());

type Event = {
  type: string;
  event_id: string;
  seq: number;
  method: string;
  params: { namespace: string[]; data: any };
};

async function post(key: string, path: string, body: unknown): Promise<Response> {
  return fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** The events of one SSE request until the root's terminal lifecycle (or `ms`). */
async function events(key: string, threadId: string, filter: Record<string, unknown>, ms = 10_000): Promise<Event[]> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), ms);
  const res = await fetch(`${server.url}/threads/${threadId}/stream/events`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(filter),
    signal: controller.signal,
  });
  expect(res.status).toBe(200);
  const out: Event[] = [];
  let text = '';
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      const frames = parseSse(text.slice(0, text.lastIndexOf('\n\n') + 2)).filter((f) => f.data); // not `: open`
      if (frames.some((f) => terminal(JSON.parse(f.data!) as Event))) {
        out.push(...frames.map((f) => JSON.parse(f.data!) as Event));
        break;
      }
    }
  } catch {
    // timed out: what came is returned
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return out;
}

const terminal = (e: Event) =>
  e.method === 'lifecycle' &&
  e.params.namespace.length === 0 &&
  ['completed', 'failed', 'interrupted'].includes(e.params.data.event);

describe('server-sent events', () => {
  it('numbers events, replays the current run, and after `since` gives only what came later', async () => {
    const key = newKey();
    const threadId = crypto.randomUUID();
    const started = await (
      await post(key, `/threads/${threadId}/commands`, {
        id: 7,
        method: 'run.start',
        params: { assistant_id: 'agent', input: userInput('count these words') },
      })
    ).json();
    expect(started).toMatchObject({
      type: 'success',
      id: 7,
      result: { run_id: expect.any(String) },
      meta: { thread_id: threadId },
    });
    const all = await events(key, threadId, { channels: ['lifecycle', 'values', 'messages', 'updates'] });
    expect(all.length).toBeGreaterThan(10);
    expect(all[0]).toMatchObject({
      type: 'event',
      method: 'lifecycle',
      params: { namespace: [], data: { event: 'running' } },
    });
    expect(all.at(-1)!.params.data).toMatchObject({ event: 'completed', graph_name: 'agent' });
    for (let i = 1; i < all.length; i++) expect(all[i]!.seq).toBeGreaterThan(all[i - 1]!.seq);
    expect(all.every((e) => e.event_id === String(e.seq))).toBe(true);
    const deltas = all.filter((e) => e.method === 'messages' && e.params.data.event === 'content-block-delta');
    expect(deltas.length).toBeGreaterThan(5);
    // a reconnect from the middle: only the later events, none twice
    const cut = all[5]!.seq;
    const later = await events(key, threadId, { channels: ['lifecycle', 'values', 'messages', 'updates'], since: cut });
    expect(later.map((e) => e.event_id)).toEqual(all.filter((e) => e.seq > cut).map((e) => e.event_id));
    // a narrower filter: only the root namespace, only values
    const values = await events(key, threadId, { channels: ['values', 'lifecycle'], namespaces: [[]], depth: 0 });
    expect(values.every((e) => e.params.namespace.length === 0)).toBe(true);
    // the run is an ordinary run
    const client = new Client({ apiUrl: server.url, apiKey: key });
    expect((await client.runs.get(threadId, started.result.run_id)).status).toBe('success');
  });

  it('follows a thread not made yet (subscribe-first.test.ts), answers 422 for a bad filter', async () => {
    const key = newKey();
    const early = await post(key, `/threads/${crypto.randomUUID()}/stream/events`, { channels: ['values'] });
    expect(early.status).toBe(200);
    await early.body?.cancel();
    expect((await post(key, `/threads/${crypto.randomUUID()}/stream/events`, { channels: ['nope'] })).status).toBe(422);
    expect((await post(key, `/threads/${crypto.randomUUID()}/commands`, { method: 'run.start' })).status).toBe(422);
  });

  it('answers protocol errors for commands it does not serve or cannot run', async () => {
    const key = newKey();
    const threadId = crypto.randomUUID();
    const answer = async (method: string, params: unknown = {}) =>
      (await post(key, `/threads/${threadId}/commands`, { id: 1, method, params })).json();
    expect(await answer('input.inject', { namespace: [], message: { role: 'user', content: 'x' } })).toMatchObject({
      type: 'error',
      error: 'not_supported',
    });
    expect(await answer('subscription.subscribe', { channels: ['values'] })).toMatchObject({ error: 'not_supported' });
    expect(await answer('no.such')).toMatchObject({ error: 'unknown_command' });
    expect(await answer('run.start', { input: null })).toMatchObject({ error: 'invalid_argument' });
    expect(await answer('run.start', { assistant_id: 'not-a-graph', input: null })).toMatchObject({
      error: 'invalid_argument',
      message: expect.stringContaining('not-a-graph'),
    });
    expect(await answer('state.get', { namespace: [] })).toMatchObject({ error: 'invalid_argument' });
  });
});

describe('ordinary runs', () => {
  it('a protocol run is listed, joined and cancelled like any run; its cancel ends the lifecycle', async () => {
    const key = newKey();
    const threadId = crypto.randomUUID();
    const client = new Client({ apiUrl: server.url, apiKey: key });
    const started = await (
      await post(key, `/threads/${threadId}/commands`, {
        id: 1,
        method: 'run.start',
        params: { assistant_id: 'slow', input: userInput('wait'), config: { configurable: { wait_ms: 30_000 } } },
      })
    ).json();
    const runId = started.result.run_id as string;
    expect((await client.runs.list(threadId)).map((r) => r.run_id)).toEqual([runId]);
    const joined = client.runs.joinStream(threadId, runId);
    const firstJoined = joined.next();
    const following = events(key, threadId, { channels: ['lifecycle'] });
    await new Promise((r) => setTimeout(r, 500));
    await client.runs.cancel(threadId, runId);
    const lifecycle = await following;
    expect(lifecycle.at(-1)!.params.data.event).toBe('interrupted');
    expect((await firstJoined).done).toBe(false);
    expect((await client.runs.get(threadId, runId)).status).toBe('interrupted');
  });
});

describe('WebSocket', () => {
  it('answers a subscription before its replay, sends live events, and checks every command', async () => {
    const key = newKey();
    const threadId = crypto.randomUUID();
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/threads/${threadId}/stream/events`, {
      headers: { 'x-api-key': key },
    });
    const messages: any[] = [];
    ws.on('message', (d) => messages.push(JSON.parse(String(d))));
    await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)));
    const reply = async (id: number) => {
      for (let i = 0; i < 500; i++) {
        const m = messages.find((x) => x.id === id && x.type !== 'event');
        if (m) return m;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error(`no answer to ${id}`);
    };
    ws.send(JSON.stringify({ id: 1, method: 'subscription.subscribe', params: { channels: ['values'] } }));
    // No thread yet: the subscription waits for the run that makes it (as the official server's does).
    const early = await reply(1);
    expect(early).toMatchObject({ type: 'success', result: { replayed_events: 0 } });
    ws.send(JSON.stringify({ id: 2, method: 'run.start', params: { assistant_id: 'agent', input: userInput('hi') } }));
    expect(await reply(2)).toMatchObject({ type: 'success', result: { run_id: expect.any(String) } });
    ws.send(
      JSON.stringify({ id: 3, method: 'subscription.subscribe', params: { channels: ['lifecycle', 'messages'] } }),
    );
    const subscribed = await reply(3);
    expect(subscribed).toMatchObject({ type: 'success', result: { subscription_id: expect.any(String) } });
    for (let i = 0; i < 500 && !messages.some((m) => m.type === 'event' && terminal(m)); i++)
      await new Promise((r) => setTimeout(r, 20));
    const evs = messages.filter((m) => m.type === 'event') as Event[];
    expect(messages.indexOf(early)).toBeLessThan(messages.indexOf(evs[0]));
    expect(evs.some((e) => e.method === 'values')).toBe(true); // the early subscription's
    expect(messages.indexOf(subscribed)).toBeLessThan(messages.indexOf(evs.find((e) => e.method === 'messages')));
    expect(new Set(evs.map((e) => e.event_id)).size).toBe(evs.length);
    expect(evs.some((e) => e.method === 'messages')).toBe(true);
    ws.send(JSON.stringify({ id: 4, method: 'subscription.unsubscribe', params: { subscription_id: 'nope' } }));
    expect(await reply(4)).toMatchObject({ error: 'no_such_subscription' });
    ws.send(JSON.stringify({ id: 5, method: 'agent.getTree', params: {} }));
    expect((await reply(5)).result.tree).toMatchObject({ namespace: [], status: 'completed', graph_name: 'agent' });
    ws.send('{"id": 6, "method": "state.get", "params": ' + '['.repeat(100) + ']'.repeat(100) + '}');
    await new Promise((r) => setTimeout(r, 100));
    expect(messages.at(-1)).toMatchObject({ type: 'error', id: null, error: 'invalid_argument' });
    ws.send('not json');
    await new Promise((r) => setTimeout(r, 100));
    expect(messages.at(-1)).toMatchObject({ type: 'error', id: null, error: 'invalid_argument' });
    ws.close();
  });
});

describe('a deleted thread', () => {
  it('ends its event streams and sockets, and a thread made again with its id replays nothing of it', async () => {
    const key = newKey();
    const client = new Client({ apiUrl: server.url, apiKey: key });
    const threadId = crypto.randomUUID();
    await post(key, `/threads/${threadId}/commands`, {
      id: 1,
      method: 'run.start',
      params: { assistant_id: 'agent', input: userInput('the first owner said this') },
    });
    expect((await events(key, threadId, { channels: ['lifecycle', 'values'] })).length).toBeGreaterThan(0);
    // A reader stays on the thread (the stream is open across runs) and a socket follows it.
    const reader = await fetch(`${server.url}/threads/${threadId}/stream/events`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ channels: ['values'] }),
    });
    const readToEnd = (async () => {
      for await (const _chunk of reader.body as unknown as AsyncIterable<Uint8Array>);
      return 'ended';
    })();
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/threads/${threadId}/stream/events`, {
      headers: { 'x-api-key': key },
    });
    await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)));
    const socketClosed = new Promise<number>((resolve) => ws.once('close', resolve));

    await client.threads.delete(threadId);
    const timeout = (ms: number) => new Promise((r) => setTimeout(r, ms, 'still open'));
    expect(await Promise.race([readToEnd, timeout(5000)])).toBe('ended');
    expect(await Promise.race([socketClosed, timeout(5000)])).toBe(4404);

    // The same id again: its readers see its own run only, nothing held from the deleted one.
    await client.threads.create({ threadId });
    await post(key, `/threads/${threadId}/commands`, {
      id: 2,
      method: 'run.start',
      params: { assistant_id: 'agent', input: userInput('the second owner said this') },
    });
    const again = await events(key, threadId, { channels: ['lifecycle', 'values'], since: 0 });
    expect(again.length).toBeGreaterThan(0);
    const text = JSON.stringify(again);
    expect(text).toContain('the second owner said this');
    expect(text).not.toContain('the first owner said this');
  });
});
